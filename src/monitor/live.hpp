#pragma once
// What `joules monitor` shows, refreshed from the sampler's snapshots on the main thread: the
// screen model (view.hpp), each GPU's power and utilisation over the last minutes for the
// sparklines and graphs, the age of the readings (stale when the sampler is stuck in a driver
// call), CPU and DRAM power from their energy counters, and the processes with their users,
// commands and shares of their GPU's energy.
//
// Not thread-safe: the main thread only.  It never calls the backend: only the sampler thread does.

#include <chrono>
#include <cstdint>
#include <ctime>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "monitor/history.hpp"
#include "monitor/process_names.hpp"
#include "monitor/view.hpp"
#include "sampler/sampler.hpp"

namespace joules::monitor {

// Readings older than the interval plus this are stale: the sampler publishes after every tick,
// so it is stuck in a driver call (a loaded machine delays a tick by far less).
inline constexpr std::chrono::milliseconds kStaleSlack{1000};
// CPU and DRAM power from their energy counters is taken over at least this long (shorter
// spans would show the jitter of the sampler's ticks).
inline constexpr double kCounterPowerSpanS = 1.0;

class live_model {
 public:
  // `devices`: indices into readings.hardware().devices(), as given to sampler::start.
  live_model(const sampler& readings, std::vector<std::size_t> devices,
             std::chrono::milliseconds interval, bool keys, std::string host);

  // A fresh model from the latest snapshot.
  const screen_model& update();

  // Waits (at most 2 s) until every device has its first health reading.
  void wait_for_health() const;
  // Whether every device's health has been read `rounds` times (a rate, such as Level Zero's
  // utilisation, needs two readings).
  bool has_health_rounds(std::uint64_t rounds) const;

 private:
  std::optional<double> counter_power(std::size_t k);
  // The GPU's processes into the model, with their shares of the energy it used since the
  // previous snapshot (`energy_j`: nullopt when that snapshot was not new).
  void add_processes(const device_info& info, const health_reading& h, const device_view& v,
                     std::optional<double> energy_j);

  const sampler& readings_;
  std::vector<std::size_t> devices_;
  std::vector<history> power_;
  std::vector<history> util_;
  std::vector<std::optional<double>> last_energy_j_;  // per device, at the last new snapshot
  // Energy given to each process, by (GPU index, pid), since monitor first saw it.
  std::map<std::pair<unsigned, unsigned>, double> process_energy_j_;
  std::vector<std::deque<std::pair<double, double>>> counter_energy_;  // (t s, energy J)
  std::chrono::nanoseconds stale_after_;
  process_names names_;
  screen_model model_;
  mono_time start_{};
  std::uint64_t last_ticks_ = ~0ULL;
};

// Local wall-clock time, "12:04:05".
std::string local_clock(std::time_t t);

// The share of its GPU's energy each of `procs` is given (docs/monitor-doctor.md): in proportion
// to its SM utilisation; equal shares when none ran a kernel (together they hold the GPU, idle
// power included); nullopt for all when the utilisation is unknown.  A pid listed twice (a
// compute and a graphics context) is one process: both entries show its share.
std::vector<std::optional<double>> energy_shares(const std::vector<gpu_process>& procs,
                                                 bool utilization_known);

// A model and copies of the histories it points to: what a paused screen keeps showing while
// readings go on.
class frozen_model {
 public:
  explicit frozen_model(const screen_model& m);
  frozen_model(const frozen_model&) = delete;
  frozen_model& operator=(const frozen_model&) = delete;
  const screen_model& model() const { return model_; }

 private:
  screen_model model_;
  std::deque<history> copies_;  // a deque: the model points into it
};

}  // namespace joules::monitor
