#pragma once
// The live state of one measured run, for the exporters (`run|wrap --prometheus`, `--otlp`).
// The run's main thread writes what it learns (finished windows, steps, training metrics, the
// prediction); the /metrics thread and the OTLP thread read a copy at their own pace.  Power and
// energy between windows come from the sampler's snapshots, not from here.
//
// What `wrap` calls, from its main loop, for every window accounting hands it:
//   measurement::add_window(w)               (already; it forwards to add_window() below)
//   live.add_step(label.step, label.step_gap, label.total, w)     for a step window
//   live.set_training_metrics(label.metrics)  for the metrics the window's line carried
//   live.set_prediction(p)                    when the predictor has a new prediction
//
// Thread-safety: every member function may be called from any thread.  A setter holds a mutex
// for a few copies; read() returns a copy, so a scrape never holds it while serialising.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "energy/accounting.hpp"
#include "steps/metrics.hpp"
#include "util/clock.hpp"
#include "windows/predictor.hpp"

namespace joules::exporter {

struct run_state {
  std::optional<mono_time> started;  // when the command started
  // Each device's energy in the sampler's snapshots at that instant (snapshots count from the
  // sampler's first reading, a little before the command started).
  std::vector<double> start_energy_j;

  // Windows added so far: exact energies from accounting, in joules.
  std::uint64_t windows = 0;
  double windows_energy_j = 0.0;
  std::vector<double> gpu_windows_energy_j;  // per measured device
  // The command has ended and its last windows are being closed: the snapshots now read past
  // its end, above the exact totals to come, so the exporters hold what they last showed.
  bool ending = false;
  bool finished = false;  // the last window is in: windows_energy_j is the run's total
  double finished_duration_s = 0.0;

  // Steps (wrap).  A window that covers k logged steps counts k steps.
  std::uint64_t steps = 0;
  std::optional<std::uint64_t> last_step;
  std::optional<std::uint64_t> total_steps;
  double steps_energy_j = 0.0;  // energy of the step windows
  double steps_duration_s = 0.0;
  std::optional<double> last_step_energy_j;  // per step, of the last step window
  std::optional<double> last_step_duration_s;
  std::vector<std::optional<double>> gpu_last_step_energy_j;  // per device, per step
  // Each device's energy per step against the median of the devices, e.g. -0.23.
  std::vector<std::optional<double>> gpu_step_deviation;

  // The latest value of every training metric printed (loss, lr, ...), in first-seen order.
  std::vector<std::pair<std::string, double>> training;

  std::optional<joules::prediction> prediction;
};

class run_metrics {
 public:
  // At most this many distinct training metric names are kept: each is a series in Prometheus.
  static constexpr std::size_t kMaxTrainingMetrics = 64;

  // One entry per measured device: whether it is a GPU (only GPUs are compared per step).
  explicit run_metrics(std::vector<bool> is_gpu);

  // The command started at `t` (measurement::child_started), when the snapshots' energy of each
  // device was `energy_j` (estimated from the latest snapshot).
  void set_started(mono_time t, std::vector<double> energy_j);
  // Every window of the run, in order.
  void add_window(const window_result& w);
  // The command has ended (measurement::end, before the sampler closes the last windows).
  void command_ended();
  // The run has ended: every window is in; `duration_s` is the run's.
  void finish(double duration_s);

  // A step window: `w` ends at step `step` and covers `steps` steps (>= 1); `total` is the run's
  // number of steps when the log says it.
  void add_step(std::uint64_t step, std::uint64_t steps, std::optional<std::uint64_t> total,
                const window_result& w);
  void set_training_metrics(std::span<const steps::metric> metrics);
  void set_prediction(const joules::prediction& p);

  run_state read() const;
  // Grows by one or more at every change: a reader that saw the same version has the same state.
  std::uint64_t version() const { return version_.load(std::memory_order_acquire); }

 private:
  void changed();  // with mu_ held

  std::vector<bool> is_gpu_;
  mutable std::mutex mu_;
  run_state state_;
  std::atomic<std::uint64_t> version_{0};  // written under mu_, after the state
};

}  // namespace joules::exporter
