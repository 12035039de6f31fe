#pragma once
// One device's cumulative energy as a function of time, from whatever it can be measured with:
// its energy counter when it has one (counter_track), else its polled power (power_track).
// A counter that stops working mid-run hands over to power at the last counter reading; a device
// that is lost keeps the energy known up to its last good reading.  Pure logic.
//
// Not thread-safe: owned by the sampler thread.

#include <optional>

#include "backends/backend.hpp"
#include "energy/counter_track.hpp"
#include "energy/power_track.hpp"

namespace joules {

class device_timeline {
 public:
  explicit device_timeline(const device_info& info);

  // A reading taken at instant t (the middle of the call that made it).
  void add(double t, const device_reading& r);
  void begin_burst() { counter_.begin_burst(); }
  void end_burst() { counter_.end_burst(); }

  // Cumulative energy (J) at t.  nullopt while t is not yet bracketed by readings, unless
  // `final`, which extrapolates from the nearest readings.  After the device is lost, energy
  // stays at what was known at its last good reading.
  std::optional<double> energy_at(double t, bool final) const;

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

 private:
  // Readings this close together count as dense (the sampler's bursts read every ~2 ms).
  static constexpr double kDenseGapS = 0.006;
  // Power integral (J) of dense spans needed before the counter/power ratio is trusted.
  static constexpr double kCalibrationMinJ = 20.0;

  std::optional<double> shaped_by_power(double t) const;
  std::optional<double> beyond_last_anchor(double t) const;
  void calibrate();
  double calibration() const;

  energy_method initial_method_;
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
};

}  // namespace joules
