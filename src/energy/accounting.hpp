#pragma once
// Accounting turns device timelines and boundary instants into windows of energy.
//
// A boundary is a timestamp: the window open at that instant ends and the next begins.  `run`
// has two (child started, child ended); `wrap` adds one per step line.  The energy of every
// device at a boundary is computed once, from the readings around it, and rounded to integer
// microjoules; a window's energy is the difference of its two boundaries.  So the windows of a
// run add up to its total exactly (energy is conserved), whatever the rounding.
//
// Thread-safety: push_boundary() may be called from any thread.  Everything else belongs to the
// sampler thread (or to the main thread after the sampler has stopped).

#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

#include "backends/backend.hpp"
#include "energy/device_timeline.hpp"
#include "util/units.hpp"

namespace joules {

// One sampler tick: the power each device reported, at the tick's instant.
struct tick_sample {
  double t = 0.0;
  std::vector<std::optional<double>> power_w;  // per accounted device
};

struct device_window {
  std::optional<microjoules> energy_uj;  // nullopt: this device yielded no reading at all
  // The highest power reading in the window; nullopt when none fell in it.  Never raised to the
  // window's average: a peak is a value a reading had.
  std::optional<double> peak_power_w;
  energy_method method = energy_method::none;
  bool lost = false;  // the device was lost before the window ended
};

struct window_result {
  std::uint64_t index = 0;  // 0 for the window opened by the first boundary
  double start_t = 0.0;
  double end_t = 0.0;
  microjoules energy_uj = 0;           // sum over the devices that have energy
  std::optional<double> peak_power_w;  // the highest per-tick sum over devices (as read)
  std::size_t ticks = 0;
  std::vector<device_window> devices;

  double duration_s() const { return end_t - start_t; }
};

// Joins window `w` into `run` (a run is its windows together): energy, ticks and the span add
// up, peaks are the highest, and a device measured two ways over the run (its counter stopped)
// is reported as polled.
void join_window(window_result& run, const window_result& w);

class accounting {
 public:
  explicit accounting(const std::vector<device_info>& devices);

  // Any thread.  Boundary instants must not decrease.
  void push_boundary(double t);

  device_timeline& timeline(std::size_t device) { return timelines_[device]; }
  const device_timeline& timeline(std::size_t device) const { return timelines_[device]; }
  std::size_t device_count() const { return timelines_.size(); }

  void add_tick(tick_sample tick);

  // Computes boundary energies that the readings now determine, and finishes windows.  With
  // `final`, every pending boundary is resolved, extrapolating where readings end early.
  void resolve(bool final);

  // Windows finished since the last call, oldest first.
  std::vector<window_result> take_finished();

  // Boundaries waiting for readings (for tests and bounded-memory checks).
  std::size_t pending_boundaries() const { return boundaries_.size(); }

  // Readings from `t` on are kept, whatever the boundaries need (nullopt: no such need): for
  // instants placed outside accounting that wait for readings (session/api_monitor.hpp).
  void keep_readings_from(std::optional<double> t) { keep_from_ = t; }

 private:
  struct window_stats {
    std::size_t ticks = 0;
    std::optional<double> node_peak_w;
    std::vector<std::optional<double>> device_peak_w;
  };
  struct boundary {
    double t = 0.0;
    bool resolved = false;
    std::vector<std::optional<microjoules>> energy_uj;  // per device, once resolved
    window_stats stats;                                 // of the window that starts here
  };

  void drain_incoming();
  void attribute(const tick_sample& tick);
  void finish_windows(bool final);

  std::mutex incoming_mu_;
  std::deque<double> incoming_;  // guarded by incoming_mu_

  std::vector<device_timeline> timelines_;
  std::deque<boundary> boundaries_;
  // Each device's energy at the last boundary resolved: a later boundary never has less.
  std::vector<std::optional<microjoules>> last_resolved_uj_;
  static constexpr double kResolveDeadlineS = 5.0;
  // With every boundary resolved, readings older than this are dropped: a boundary placed later
  // is stamped at most a few ticks in the past.
  static constexpr double kLateBoundaryS = 10.0;

  std::optional<double> keep_from_;          // keep_readings_from()
  std::optional<tick_sample> pending_tick_;  // attributed when the next tick arrives
  double last_attributed_t_ = -1.0;
  double latest_tick_t_ = -1.0;
  std::uint64_t next_index_ = 0;
  std::vector<window_result> finished_;
};

}  // namespace joules
