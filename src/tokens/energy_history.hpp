#pragma once
// The GPUs' energy at the instants token counts were taken.  Exact where the sampler can say:
// exact_at() asks its accounting, which places the energy at a past instant from the readings
// around it as it places a window boundary, without the dense reads a boundary asks for (those,
// every second for the life of `serve`, would cost more than the scrape itself) and without
// splitting a run's windows, which are its steps in `wrap`.  Otherwise (a sampler that cannot
// place it yet, or no longer), the last minutes of the sampler's snapshots: at() is linear
// between the two snapshots around the instant, off by the change of power within one sampler
// interval at each end of a window.  docs/inference.md.
//
// Thread-safety: push() from one thread (the follower of the snapshots), at() and wait_for()
// from any; a mutex guards the points.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <stop_token>
#include <vector>

#include "util/clock.hpp"

namespace joules::tokens {

class energy_history {
 public:
  // Each device's energy at t_s (snapshot order), when the sampler can place it; else nullopt.
  using exact_source = std::function<std::optional<std::vector<double>>(double t_s)>;

  // `devices` energies per point; points older than `keep_s` before the newest are dropped.
  explicit energy_history(std::size_t devices, exact_source exact = {}, double keep_s = 400.0);

  // A snapshot at `t_s` (monotonic seconds, after the previous one): each device's energy since
  // the sampler's first reading; a device without a value keeps its previous one.
  void push(double t_s, std::span<const std::optional<double>> energy_j);

  // The energy of `devices` (indices into a point) summed, at t_s: interpolated between the
  // points around it; nullopt before the oldest point kept or after the newest.
  std::optional<double> at(double t_s, std::span<const std::size_t> devices) const;

  // The energy of `devices` at t_s from the sampler's accounting, when it can say yet.
  std::optional<double> exact_at(double t_s, std::span<const std::size_t> devices) const;

  // Waits until a point at or after t_s exists (true), `deadline` passes, close() is called or
  // `stop` is requested (false).
  bool wait_for(double t_s, mono_time deadline, const std::stop_token& stop) const;

  // No more points: waiters return.
  void close();

  std::optional<double> newest_s() const;

 private:
  struct point {
    double t_s;
    std::vector<double> energy_j;
  };
  const std::size_t devices_;
  const exact_source exact_;
  const double keep_s_;
  mutable std::mutex mu_;
  mutable std::condition_variable_any cv_;
  std::deque<point> points_;
  std::vector<std::optional<double>> last_;
  bool closed_ = false;
};

}  // namespace joules::tokens
