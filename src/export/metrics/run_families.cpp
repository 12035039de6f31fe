#include "export/metrics/run_families.hpp"

#include <algorithm>
#include <string>

#include "export/metrics/gpu_metrics.hpp"

namespace joules::exporter {
namespace {

std::size_t component_index(device_kind k) {
  switch (k) {
    case device_kind::gpu:
      return 0;
    case device_kind::cpu:
      return 1;
    case device_kind::dram:
      return 2;
  }
  return 0;
}

}  // namespace

run_families::run_families(exposition& e, std::vector<device_info> devices, const label_set& base,
                           std::string_view subcommand)
    : devices_(std::move(devices)), base_(base) {
  using mt = metric_type;
  info_ = &e.add_family("joules_run_info", "The run, as labels: the subcommand that measures it.",
                        mt::info);
  energy_ = &e.add_family(
      "joules_run_energy_joules_total",
      "Energy of the run's devices since it started, in joules (exact once the run has ended).",
      mt::counter);
  duration_ = &e.add_family("joules_run_duration_seconds",
                            "Time since the run started, at the readings behind "
                            "joules_run_energy_joules_total, in seconds.",
                            mt::gauge);
  finished_ = &e.add_family("joules_run_finished", "1 once the command has ended.", mt::gauge);
  power_ = &e.add_family("joules_run_power_watts",
                         "Power of the run's devices together, in watts (the latest readings).",
                         mt::gauge);
  component_energy_ = &e.add_family(
      "joules_run_component_energy_joules_total",
      "Energy of the run by component (gpu; cpu and dram where RAPL measures them), in joules.",
      mt::counter);
  gpu_energy_ = &e.add_family("joules_run_gpu_energy_joules_total",
                              "Energy of one GPU since the run started, in joules.", mt::counter);
  gpu_power_ =
      &e.add_family("joules_run_gpu_power_watts",
                    "Power of one GPU of the run, in watts (the latest reading).", mt::gauge);
  gpu_lost_ = &e.add_family("joules_run_gpu_lost",
                            "1 when the GPU stopped answering during the run.", mt::gauge);
  steps_ = &e.add_family("joules_run_steps_total", "Training steps seen in the log (wrap).",
                         mt::counter);
  step_energy_ = &e.add_family("joules_run_step_energy_joules_total",
                               "Energy of the step windows so far, in joules (wrap).", mt::counter);
  step_duration_ =
      &e.add_family("joules_run_step_duration_seconds_total",
                    "Duration of the step windows so far, in seconds (wrap).", mt::counter);
  last_step_ =
      &e.add_family("joules_run_last_step", "Number of the last step seen (wrap).", mt::gauge);
  total_steps_ =
      &e.add_family("joules_run_total_steps",
                    "Steps in the whole run, as the log or --total-steps says (wrap).", mt::gauge);
  last_step_energy_ =
      &e.add_family("joules_run_last_step_energy_joules",
                    "Energy per step of the last step window, in joules (wrap).", mt::gauge);
  last_step_duration_ =
      &e.add_family("joules_run_last_step_duration_seconds",
                    "Duration per step of the last step window, in seconds (wrap).", mt::gauge);
  gpu_last_step_energy_ = &e.add_family(
      "joules_run_gpu_last_step_energy_joules",
      "One GPU's energy per step in the last step window, in joules (wrap).", mt::gauge);
  gpu_deviation_ = &e.add_family("joules_run_gpu_step_energy_deviation_ratio",
                                 "One GPU's energy per step against the median of the run's GPUs "
                                 "in the last step window: -0.2 is 20 % below (wrap).",
                                 mt::gauge);
  training_ = &e.add_family("joules_run_training_metric",
                            "The latest value of a metric the trainer prints, named by `metric` "
                            "(loss, lr, ...; SI units, see docs/step-formats.md) (wrap).",
                            mt::gauge);
  predicted_energy_ =
      &e.add_family("joules_run_predicted_energy_joules",
                    "Predicted energy of the whole run, in joules (wrap).", mt::gauge);
  predicted_duration_ =
      &e.add_family("joules_run_predicted_duration_seconds",
                    "Predicted duration of the whole run, in seconds (wrap).", mt::gauge);
  predicted_remaining_ =
      &e.add_family("joules_run_predicted_remaining_seconds",
                    "Predicted time left until the last step, in seconds (wrap).", mt::gauge);
  predicted_total_steps_ = &e.add_family("joules_run_predicted_total_steps",
                                         "Steps the prediction is made for (wrap).", mt::gauge);

  info_labels_ = base_.with("subcommand", subcommand);
  for (const auto& d : devices_) {
    label_set g = gpu_labels_of(d);
    for (const auto& l : base_.labels())
      g.add(l.name, l.value);
    gpu_.push_back(std::move(g));
  }
  for (std::string_view c : {"gpu", "cpu", "dram"})
    component_.push_back(base_.with("component", c));
  last_counter_.assign(devices_.size() + 1 + component_.size(), 0.0);
}

double run_families::monotone(std::size_t slot, double value) {
  last_counter_[slot] = std::max(last_counter_[slot], value);
  return last_counter_[slot];
}

void run_families::fill(const sampler_snapshot* snap, const run_state& state) {
  info_->add_info(info_labels_);
  finished_->add(base_, state.finished ? 1.0 : 0.0);
  const std::size_t n = devices_.size();
  std::optional<double> power;
  // Energy per device: the windows' exact sums once the run has ended, else the live readings;
  // between the command's end and those sums, what was last shown (a reading taken then would
  // count energy after the end, and the counters cannot come back down to the exact sums).
  std::vector<std::optional<double>> energy(n);
  if (state.finished) {
    for (std::size_t k = 0; k < n && k < state.gpu_windows_energy_j.size(); ++k)
      energy[k] = state.gpu_windows_energy_j[k];
  } else if (state.ending) {
    if (held_energy_.size() == n) energy = held_energy_;
  } else if (snap != nullptr) {
    for (std::size_t k = 0; k < n && k < snap->devices.size(); ++k) {
      const double before = k < state.start_energy_j.size() ? state.start_energy_j[k] : 0.0;
      if (const auto e = snap->devices[k].energy_j) energy[k] = std::max(0.0, *e - before);
    }
  }
  held_energy_ = energy;
  if (state.finished || snap != nullptr) {
    double total = 0.0;
    std::vector<std::optional<double>> by_component(component_.size());
    for (std::size_t k = 0; k < n; ++k) {
      if (!energy[k]) continue;
      total += *energy[k];
      const std::size_t c = component_index(devices_[k].kind);
      by_component[c] = by_component[c].value_or(0.0) + *energy[k];
      if (devices_[k].kind == device_kind::gpu)
        gpu_energy_->add(gpu_[k], monotone(k + 1, *energy[k]));
    }
    energy_j_ = monotone(0, state.finished ? state.windows_energy_j : total);
    energy_->add(base_, *energy_j_);
    for (std::size_t c = 0; c < component_.size(); ++c) {
      if (by_component[c])
        component_energy_->add(component_[c], monotone(n + 1 + c, *by_component[c]));
    }
  }
  if (state.finished) {
    duration_->add(base_, state.finished_duration_s);
  } else if (snap != nullptr && state.started) {
    duration_->add(base_, std::max(0.0, seconds_between(*state.started, snap->taken)));
  }
  if (snap != nullptr) {
    for (std::size_t k = 0; k < n && k < snap->devices.size(); ++k) {
      const auto& d = snap->devices[k];
      if (d.power_w && !d.lost && !state.finished) power = power.value_or(0.0) + *d.power_w;
      if (devices_[k].kind != device_kind::gpu) continue;
      gpu_lost_->add(gpu_[k], d.lost ? 1.0 : 0.0);
      if (d.power_w && !d.lost && !state.finished) gpu_power_->add(gpu_[k], *d.power_w);
    }
  }
  if (power) power_->add(base_, *power);

  steps_->add(base_, static_cast<double>(state.steps));
  step_energy_->add(base_, state.steps_energy_j);
  step_duration_->add(base_, state.steps_duration_s);
  if (state.last_step) last_step_->add(base_, static_cast<double>(*state.last_step));
  if (state.total_steps) total_steps_->add(base_, static_cast<double>(*state.total_steps));
  last_step_energy_->add_if_known(base_, state.last_step_energy_j);
  last_step_duration_->add_if_known(base_, state.last_step_duration_s);
  for (std::size_t k = 0; k < n; ++k) {
    if (devices_[k].kind != device_kind::gpu) continue;
    if (k < state.gpu_last_step_energy_j.size())
      gpu_last_step_energy_->add_if_known(gpu_[k], state.gpu_last_step_energy_j[k]);
    if (k < state.gpu_step_deviation.size())
      gpu_deviation_->add_if_known(gpu_[k], state.gpu_step_deviation[k]);
  }
  for (const auto& [name, value] : state.training)
    training_->add(base_.with("metric", name), value);
  if (state.prediction) {
    const auto& p = *state.prediction;
    predicted_energy_->add(base_, p.energy_j);
    predicted_duration_->add(base_, p.duration_s);
    predicted_remaining_->add(base_, p.remaining_s);
    predicted_total_steps_->add(base_, static_cast<double>(p.total_steps));
  }
}

}  // namespace joules::exporter
