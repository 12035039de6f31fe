#pragma once
// Cumulative energy from polled power readings: trapezoidal integration between samples, the
// exact integral of the piecewise-linear power curve through them.  Energy at an instant between
// two samples integrates that line up to the instant, so a window shorter than the poll period
// still gets its share (matcha gives such windows 0 J).  Pure logic; CLOCK_MONOTONIC seconds.
//
// A reading that is an average over a window W (nvmlDeviceGetPowerUsage on Ampere and newer
// averages over 1 s) describes the middle of that window, so it is placed W/2 before the read.
//
// Not thread-safe: owned by the sampler thread.

#include <deque>
#include <optional>

namespace joules {

class power_track {
 public:
  explicit power_track(double window_s = 0.0) : shift_s_(window_s / 2.0) {}

  void add(double read_t, double power_w);

  // Cumulative energy at t (J, 0 at the first sample).  Beyond the samples it holds the nearest
  // power constant when `extrapolate`, and returns nullopt otherwise.
  std::optional<double> energy_at(double t, bool extrapolate) const;
  bool covers(double t) const { return !samples_.empty() && samples_.back().t >= t; }
  void trim_before(double t);

  // The longest stretch of [t0, t1] without a sample (from t0 to the first sample, between
  // samples, from the last sample to t1): the integral over [t0, t1] is exact to within that
  // stretch times the change of power across it.  Infinity when the samples do not reach both
  // ends.
  double max_gap(double t0, double t1) const;

  // Bounds on the error of energy_at (docs/c-api.md, "Error bound"), assuming power moves
  // monotonically between two readings (true when they are closer than the power's own update
  // period): the integral over a whole stretch between readings g apart whose power changes by
  // dp is then off by at most g*|dp|/2, over a part h of one by at most h*|dp|.
  //   bound_before(t): the bounds of the whole stretches that end at or before t, summed since
  //     the first reading (cumulative, like energy);
  //   bound_edge(t): g*|dp| of the stretch that holds t (beyond the readings, power held: the
  //     energy there, all of it).
  // The integral over [t0, t1] is off by at most
  //   bound_before(t1) - bound_before(t0) + bound_edge(t0) + bound_edge(t1).
  double bound_before(double t) const;
  double bound_edge(double t) const;

  // The stretch between two readings that holds t (t0 <= t < t1), placed as energy_at places
  // them; nullopt before the first reading and from the last one on.
  struct stretch {
    double t0, t1, p0, p1;
  };
  std::optional<stretch> stretch_at(double t) const;
  // The first and last readings' instants (nullopt without readings).
  std::optional<double> first_t() const {
    return samples_.empty() ? std::nullopt : std::optional<double>(samples_.front().t);
  }
  std::optional<double> last_t() const {
    return samples_.empty() ? std::nullopt : std::optional<double>(samples_.back().t);
  }
  // The highest reading in [t0, t1], with the readings just outside it; nullopt without readings.
  std::optional<double> max_power(double t0, double t1) const;

  bool empty() const { return samples_.empty(); }
  std::optional<double> last_power_w() const {
    return samples_.empty() ? std::nullopt : std::optional<double>(samples_.back().p);
  }
  std::size_t sample_count() const { return samples_.size(); }

 private:
  struct sample {
    double t;
    double p;
    double cum;        // energy from the first sample to t
    double cum_bound;  // bound_before(t): error bounds of the stretches from the first sample to t
  };
  double shift_s_;
  std::deque<sample> samples_;
};

}  // namespace joules
