#include "export/metrics/footprint_metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace joules::exporter {
namespace {

std::string_view state_of(const component_status& c) {
  if (c.method == energy_method::estimated) return "estimated";
  if (c.method == energy_method::simulated) return "simulated";
  if (c.method != energy_method::none) return "measured";
  return c.fix.empty() ? "absent" : "unreadable";
}

}  // namespace

std::vector<component_state> component_states(const component_options& requested,
                                              const std::vector<component_status>& status,
                                              std::size_t gpus, bool gpus_simulated) {
  std::vector<component_state> out;
  out.push_back({"gpu", !requested.gpu   ? "off"
                        : gpus == 0      ? "absent"
                        : gpus_simulated ? "simulated"
                                         : "measured"});
  for (const device_kind kind : {device_kind::cpu, device_kind::dram}) {
    const bool cpu = kind == device_kind::cpu;
    component_state s{cpu ? "cpu" : "dram", "off"};
    if (cpu ? requested.cpu : requested.dram) {
      s.state = "absent";
      const auto it = std::find_if(status.begin(), status.end(),
                                   [&](const component_status& c) { return c.kind == kind; });
      if (it != status.end()) s.state = state_of(*it);
    }
    out.push_back(std::move(s));
  }
  return out;
}

bool gpus_simulated(const std::vector<device_info>& devices) {
  bool any = false;
  for (const auto& d : devices) {
    if (d.kind != device_kind::gpu) continue;
    if (!d.simulated) return false;
    any = true;
  }
  return any;
}

footprint_metrics::footprint_metrics(exposition& e, const label_set& base, std::string_view prefix,
                                     carbon::factors factors,
                                     const std::vector<component_state>& components)
    : factors_(std::move(factors)), base_(base) {
  const std::string_view whose =
      prefix == "joules_run" ? "the run's measured energy" : "the energy measured since start";
  kwh_ = &e.add_family(
      fmt::format("{}_energy_kwh_total", prefix),
      fmt::format("Energy drawn from the grid for {}, in kWh: measured energy x PUE (joules_pue).",
                  whose),
      metric_type::counter);
  co2e_ = &e.add_family(
      fmt::format("{}_co2e_grams_total", prefix),
      fmt::format("CO2e of {} after PUE, in grams, at the carbon intensity named by its labels "
                  "(region, source, year, method).",
                  whose),
      metric_type::counter);
  cost_ =
      &e.add_family(fmt::format("{}_cost_total", prefix),
                    fmt::format("Cost of {} after PUE, in `currency`, at --price-per-kwh.", whose),
                    metric_type::counter);
  pue_factor_ = &e.add_family(
      "joules_pue",
      "Power usage effectiveness applied to measured energy; `source` is --pue or default.",
      metric_type::gauge);
  intensity_ = &e.add_family(
      "joules_carbon_intensity_grams_per_kwh",
      "Carbon intensity of the electricity in grams of CO2e per kWh, with its provenance "
      "(region, source, year, method).",
      metric_type::gauge);
  price_factor_ =
      &e.add_family("joules_price_per_kwh", "Price of one kWh in `currency` (--price-per-kwh).",
                    metric_type::gauge);
  status_ = &e.add_family("joules_component_status",
                          "1 for the state each component is in (measured, simulated, estimated, "
                          "unreadable, absent, off), 0 for the others.",
                          metric_type::gauge);

  pue_ = base_.with("source", factors_.pue_source);
  if (factors_.grid) {
    const carbon::intensity& i = *factors_.grid;
    grid_ = base_.with("region", i.region)
                .with("source", i.source)
                .with("year", i.year ? std::to_string(*i.year) : std::string())
                .with("method", i.method);
  }
  if (factors_.cost) {
    price_ = base_.with("currency", factors_.cost->currency).with("source", factors_.cost->source);
  }
  for (const auto& c : components) {
    for (const std::string_view state : kComponentStates) {
      component_.push_back(base_.with("component", c.component).with("status", state));
      component_value_.push_back(state == c.state ? 1.0 : 0.0);
    }
  }
}

void footprint_metrics::fill(std::optional<double> energy_j) {
  pue_factor_->add(pue_, factors_.pue);
  if (factors_.grid) intensity_->add(grid_, factors_.grid->g_per_kwh);
  if (factors_.cost) price_factor_->add(price_, factors_.cost->per_kwh);
  for (std::size_t i = 0; i < component_.size(); ++i)
    status_->add(component_[i], component_value_[i]);
  if (!energy_j) return;
  const carbon::assessment a = carbon::assess(factors_, *energy_j);
  kwh_->add(base_, a.facility_energy_kwh);
  if (a.co2e_g) co2e_->add(grid_, *a.co2e_g);
  if (a.cost) cost_->add(price_, *a.cost);
}

}  // namespace joules::exporter
