#pragma once
// What `joules monitor` shows, refreshed from the sampler's snapshots on the main thread: the
// screen model (view.hpp), each device's power history for the sparklines, the age of the
// readings (stale when the sampler is stuck in a driver call), CPU and DRAM power from their
// energy counters, and the processes with their users and commands.
//
// Not thread-safe: the main thread only.  It never calls the backend: only the sampler thread does.

#include <chrono>
#include <cstdint>
#include <ctime>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "monitor/power_history.hpp"
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

 private:
  std::optional<double> counter_power(std::size_t k);

  const sampler& readings_;
  std::vector<std::size_t> devices_;
  std::vector<power_history> histories_;
  std::vector<std::deque<std::pair<double, double>>> counter_energy_;  // (t s, energy J)
  std::chrono::nanoseconds stale_after_;
  process_names names_;
  screen_model model_;
  mono_time start_{};
  std::uint64_t last_ticks_ = ~0ULL;
};

// Local wall-clock time, "12:04:05".
std::string local_clock(std::time_t t);

}  // namespace joules::monitor
