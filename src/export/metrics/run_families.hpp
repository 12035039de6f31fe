#pragma once
// The metrics of one measured run (`joules run|wrap --prometheus`, `--otlp`), under
// `joules_run_*` names so that they never mix with a node exporter's `joules_gpu_*` series on
// the same machine: the run's energy so far, per-GPU power and energy since the run started,
// steps, the last step's energy and duration, each GPU's energy per step and its deviation from
// the median, the energy of each component (gpu; cpu and dram where RAPL measures them), the
// training metrics the log prints, and the prediction of the whole run.
// Every name is listed in docs/metrics.md.
//
// Between windows, power and energy come from the sampler's latest snapshot; once the run has
// ended, from the windows accounting closed (the exact totals the records carry).  A counter
// never goes down between two fills, so Prometheus' rate() never sees a false reset.
//
// Thread-safety: none; one per exposition, used by the thread that owns it.

#include <optional>
#include <vector>

#include "backends/backend.hpp"
#include "export/metrics/exposition.hpp"
#include "export/metrics/run_metrics.hpp"
#include "sampler/sampler.hpp"

namespace joules::exporter {

class run_families {
 public:
  // `devices`: the measured ones, in snapshot order.  `base`: the labels of every series (run_id,
  // hostname, user labels); per-GPU series add gpu, uuid, model.
  run_families(exposition& e, std::vector<device_info> devices, const label_set& base,
               std::string_view subcommand);

  // `snap` may be null (no reading yet).
  void fill(const sampler_snapshot* snap, const run_state& state);

  // The value of joules_run_energy_joules_total at the last fill, in joules; unknown before the
  // first reading.
  std::optional<double> energy_j() const { return energy_j_; }

 private:
  double monotone(std::size_t slot, double value);

  std::vector<device_info> devices_;
  label_set base_;
  label_set info_labels_;
  std::vector<label_set> gpu_;                      // per device (GPUs only get per-device series)
  std::vector<label_set> component_;                // gpu, cpu, dram
  std::vector<std::optional<double>> held_energy_;  // per device, shown while the run is ending
  std::vector<double> last_counter_;  // per counter slot: 0 = run, then devices, then components
  std::optional<double> energy_j_;

  metric_family* info_;
  metric_family* energy_;
  metric_family* duration_;
  metric_family* finished_;
  metric_family* power_;
  metric_family* component_energy_;
  metric_family* gpu_energy_;
  metric_family* gpu_power_;
  metric_family* gpu_lost_;
  metric_family* steps_;
  metric_family* step_energy_;
  metric_family* step_duration_;
  metric_family* last_step_;
  metric_family* total_steps_;
  metric_family* last_step_energy_;
  metric_family* last_step_duration_;
  metric_family* gpu_last_step_energy_;
  metric_family* gpu_deviation_;
  metric_family* training_;
  metric_family* predicted_energy_;
  metric_family* predicted_duration_;
  metric_family* predicted_remaining_;
  metric_family* predicted_total_steps_;
};

}  // namespace joules::exporter
