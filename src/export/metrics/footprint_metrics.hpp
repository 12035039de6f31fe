#pragma once
// What the measured energy means, for run|wrap --prometheus and joules serve (docs/metrics.md,
// docs/carbon.md): the energy in kWh after PUE, its CO2e in grams and its
// cost, each growing with the energy; the factors in force with where they come from; and the
// state of every component (gpu, cpu, dram: measured, estimated, unreadable, absent or off).
//
// Provenance is on the series it qualifies, as labels that never change during a process's life:
// CO2e and the intensity carry `region`, `source`, `year`, `method` (carbon::intensity); cost and
// the price carry `currency` (a unit: costs in two currencies must never add up) and `source`; the
// PUE carries `source`.  A factor that is not known gives no series (unknown is not zero).
//
// Thread-safety: none; one per exposition, used by the thread that owns it.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.hpp"
#include "carbon/carbon.hpp"
#include "export/metrics/exposition.hpp"

namespace joules::exporter {

// One component and its state: measured (counters or power), estimated (--estimate-cpu),
// unreadable (RAPL counters exist but cannot be read: run as root or fix the permissions),
// absent (nothing to read), off (left out by --components).
struct component_state {
  std::string component;  // gpu | cpu | dram
  std::string state;
};

inline constexpr std::string_view kComponentStates[] = {"measured",   "simulated", "estimated",
                                                        "unreadable", "absent",    "off"};

// The states of gpu, cpu and dram: `requested` is what --components asked for, `status` what the
// backend found (backend::components()), `gpus` how many GPUs are measured, and
// `gpus_simulated` whether they are the sim backend's (then "simulated", never "measured").
// Pure.
std::vector<component_state> component_states(const component_options& requested,
                                              const std::vector<component_status>& status,
                                              std::size_t gpus, bool gpus_simulated = false);

// Whether every GPU of `devices` is simulated (and there is one).
bool gpus_simulated(const std::vector<device_info>& devices);

class footprint_metrics {
 public:
  // `prefix` names the energy's owner: "joules_run" (the run's energy) or "joules_node" (what
  // joules serve has measured since it started).
  footprint_metrics(exposition& e, const label_set& base, std::string_view prefix,
                    carbon::factors factors, const std::vector<component_state>& components);

  // `energy_j`: the measured energy so far (before PUE), monotone; unknown before any reading.
  void fill(std::optional<double> energy_j);

 private:
  carbon::factors factors_;
  label_set base_;
  label_set pue_;
  label_set grid_;   // base + region, source, year, method
  label_set price_;  // base + currency, source
  std::vector<label_set> component_;
  std::vector<double> component_value_;
  metric_family* kwh_;
  metric_family* co2e_;
  metric_family* cost_;
  metric_family* pue_factor_;
  metric_family* intensity_;
  metric_family* price_factor_;
  metric_family* status_;
};

}  // namespace joules::exporter
