#pragma once
// One device's cumulative energy as a function of time, from whatever it can be measured with:
// its energy counter when it has one (counter_track), else its polled power (power_track).
// A counter that stops working mid-run hands over to power at the last counter reading; a device
// that is lost keeps the energy known up to its last good reading.  Pure logic.
//
// Not thread-safe: owned by the sampler thread.

#include <deque>
#include <optional>
#include <utility>

#include "backends/backend.hpp"
#include "energy/counter_track.hpp"
#include "energy/power_track.hpp"

namespace joules {

// The energy at an instant and bounds on its error (docs/c-api.md, "Error bound").  The energy
// of a window [t0, t1] is off by at most
//   cumulative_error_j(t1) - cumulative_error_j(t0) + edge_error_j(t0) + edge_error_j(t1):
// errors that grow with the window's length (power integrated between readings) accumulate in
// `cumulative_error_j`; placing the instant itself among the readings costs `edge_error_j`.
struct energy_estimate {
  double energy_j = 0.0;
  double edge_error_j = 0.0;
  double cumulative_error_j = 0.0;
};

class device_timeline {
 public:
  explicit device_timeline(const device_info& info);

  // A reading taken at instant t (the middle of the call that made it, which lasted
  // `read_span_s`: the reading was taken within half of it either side of t).
  void add(double t, const device_reading& r, double read_span_s = 0.0);
  void begin_burst() { counter_.begin_burst(); }
  void end_burst() { counter_.end_burst(); }

  // Cumulative energy (J) at t.  nullopt while t is not yet bracketed by readings, unless
  // `final`, which extrapolates from the nearest readings.  After the device is lost, energy
  // stays at what was known at its last good reading.
  std::optional<double> energy_at(double t, bool final) const;
  // The same energy, with bounds on its error.
  std::optional<energy_estimate> estimate_at(double t, bool final) const;

  // False while the energy at t comes from the counter's first value, placed by a prediction
  // that later readings may still move by a whole update (counter_track::settled_at).
  bool settled_at(double t) const {
    const bool by_counter = use_counter_ && (!counter_stopped_at_ || t <= *counter_stopped_at_);
    return !by_counter || lost() || silent_at_ || counter_.settled_at(t);
  }

  // Energy measured by each method up to t (for records that say how numbers were obtained).
  energy_method method_between(double t0, double t1) const;

  void trim_before(double t);

  bool lost() const { return lost_at_.has_value(); }
  std::optional<double> lost_at() const { return lost_at_; }
  int read_errors() const { return read_errors_; }
  int last_error_code() const { return last_error_code_; }
  int counter_resets() const { return counter_.resets(); }
  int counter_wraps() const { return counter_.wraps(); }
  double reset_estimated_j() const { return counter_.reset_estimated_j(); }
  std::optional<double> counter_lost_at() const { return counter_stopped_at_; }
  // The instant from which neither the counter nor power answered (NOT_SUPPORTED mid-run).
  std::optional<double> silent_at() const { return silent_at_; }
  bool has_readings() const { return has_good_read_; }
  double last_good_t() const { return last_good_t_; }
  const counter_track& counter() const { return counter_; }
  // How long a read of this device's counter usually takes (counter_track::set_read_span).
  void set_read_span(double usual_s) { counter_.set_read_span(usual_s); }

 private:
  // Readings this close together count as dense (the sampler's bursts read every ~2 ms).
  static constexpr double kDenseGapS = 0.006;
  // Power integral (J) of dense spans needed before the counter/power ratio is trusted.
  static constexpr double kCalibrationMinJ = 20.0;

  // With `bound`, the error bounds are filled in; the energy is the same either way.
  std::optional<energy_estimate> estimate(double t, bool final, bool bound) const;
  // The counter's energy at t (placed, shaped by power, or extrapolated); `error`, when given,
  // receives the bound on its error.
  std::optional<double> counter_energy(double t, bool extrapolate, double* error) const;
  std::optional<double> shaped_by_power(double t, double* error) const;
  std::optional<double> beyond_last_anchor(double t, double* error) const;
  // Bound on the error of counter_.energy_at(t, fallback) (interpolated between anchors, or
  // extrapolated past them at `rate`).
  double counter_error(double t, std::optional<double> rate) const;
  // How far from its instant the update that made an anchor may lie: half its bracket (pinned),
  // its whole bracket (placed by the model's prediction), with the reads' own spans.
  double anchor_uncertainty(const energy_anchor& a) const;
  // The highest power near [t0, t1]: the power readings, or else the counter's average rate.
  double power_near(double t0, double t1, double counter_rate_w) const;
  // Bound on the error of the power integral over [t0, t1] (a short stretch around an instant):
  // stretches between dense readings (at most kDenseGapS apart) by power_track's rule; within a
  // sparser one, where power may have gone anywhere between the readings, the part's length
  // times the most the device can draw (power_cap()).
  double integral_bound(double t0, double t1) const;
  // Its power limit, or else the highest reading near t.
  double power_cap(double t) const;
  // The longest read near [t0, t1] (the reads' instants are their middles).
  double read_span_near(double t0, double t1) const;
  void calibrate();
  double calibration() const;

  energy_method initial_method_;
  double power_limit_w_ = 0.0;  // the highest limit the device reported (0: unknown)
  bool use_counter_;
  bool power_instant_;
  bool has_power_;
  double cal_counter_j_ = 0.0;
  double cal_power_j_ = 0.0;
  double examined_until_ = -1e300;  // calibrate() has looked at every anchor up to here
  counter_track counter_;
  power_track power_;
  std::optional<double> counter_stopped_at_;  // instant of the last counter reading
  std::optional<double> lost_at_;
  std::optional<double> power_stopped_at_;  // power answered NOT_SUPPORTED
  std::optional<double> silent_at_;
  bool has_good_read_ = false;
  double last_good_t_ = 0.0;
  int read_errors_ = 0;
  int last_error_code_ = 0;
  std::deque<std::pair<double, double>> read_spans_;  // (instant, duration) of recent reads
};

}  // namespace joules
