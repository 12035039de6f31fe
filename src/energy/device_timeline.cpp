#include "energy/device_timeline.hpp"

#include <algorithm>

namespace joules {

device_timeline::device_timeline(const device_info& info)
    : initial_method_(info.method()),
      use_counter_(info.has_energy_counter),
      power_instant_(info.power != power_source::none && !info.power_window),
      has_power_(info.power != power_source::none),
      power_(info.power_window ? info.power_window->count() : 0.0) {
  if (info.wrap) counter_.set_wrap(info.wrap->modulus, info.wrap->max_power.value);
  counter_.set_unit_uj(info.counter_unit_uj);
  if (info.counter_continuous) counter_.set_continuous();
}

void device_timeline::add(double t, const device_reading& r) {
  if (lost_at_ || silent_at_) return;
  if (r.status == read_status::lost) {
    lost_at_ = t;
    return;
  }
  if (r.status == read_status::error) {
    ++read_errors_;
    last_error_code_ = r.error_code;
    return;
  }
  std::optional<double> p;
  if (r.power) p = r.power->value;
  if (r.power_unsupported && !power_stopped_at_) power_stopped_at_ = t;
  if (p) power_.add(t, *p);
  bool counted = false;
  if (use_counter_ && !counter_stopped_at_) {
    if (r.energy_mj || r.energy_uj || r.energy_counts) {
      if (r.energy_counts) {
        counter_.add_counts(t, *r.energy_counts, p);
      } else if (r.energy_uj) {
        counter_.add_uj(t, *r.energy_uj, p);
      } else {
        counter_.add(t, *r.energy_mj, p);
      }
      counted = true;
      if (power_instant_) calibrate();
    } else if (r.counter_unsupported) {
      // The counter stopped answering: from its last reading on, integrate power instead.
      counter_stopped_at_ = counter_.has_reads() ? counter_.last_read_t() : t;
    }
  }
  if (!counted && !p) {
    // Nothing in this reading says what the device used.  Once neither the counter nor power
    // can answer any more, the device is as good as lost: its energy stays what was known at
    // its last useful reading, rather than growing at its last power for ever.
    const bool counter_gone = !use_counter_ || counter_stopped_at_;
    const bool power_gone = !has_power_ || power_stopped_at_;
    if (counter_gone && power_gone && !silent_at_) silent_at_ = t;
    return;
  }
  has_good_read_ = true;
  last_good_t_ = t;
}

std::optional<double> device_timeline::energy_at(double t, bool final) const {
  if (!has_good_read_) return final ? std::optional<double>(0.0) : std::nullopt;
  // After loss, nothing is known past the last good reading.
  const bool frozen = lost_at_.has_value() || silent_at_.has_value();
  if (frozen) t = std::min(t, last_good_t_);
  const bool extrapolate = final || frozen;
  const auto rate = power_.last_power_w();

  if (!use_counter_) return power_.energy_at(t, extrapolate);
  if (!counter_stopped_at_ || t <= *counter_stopped_at_) {
    if (auto shaped = shaped_by_power(t)) return shaped;
    if (extrapolate) {
      if (auto beyond = beyond_last_anchor(t)) return beyond;
    }
    std::optional<double> fallback;
    if (extrapolate) fallback = rate.value_or(0.0);
    return counter_.energy_at(t, fallback);
  }
  const double ts = *counter_stopped_at_;
  const auto at_switch = counter_.energy_at(ts, rate.value_or(0.0));
  const auto p_switch = power_.energy_at(ts, true);
  const auto p_now = power_.energy_at(t, extrapolate);
  if (!at_switch) return std::nullopt;
  if (!p_switch || !p_now) return extrapolate ? at_switch : std::nullopt;
  return *at_switch + (*p_now - *p_switch);
}

std::optional<double> device_timeline::shaped_by_power(double t) const {
  // Between two counter anchors the counter gives the exact energy; power readings, when they
  // cover the interval, tell how it was spread in time.  Linear interpolation assumes it was
  // spread evenly, which misplaces energy at boundaries inside bursts of activity.
  const auto b = counter_.bracket(t);
  if (!b) return std::nullopt;
  const auto& [a, z] = *b;
  if (power_.empty() || !power_.covers(z.t)) return std::nullopt;
  const auto pa = power_.energy_at(a.t, false);
  const auto pt = power_.energy_at(t, false);
  const auto pz = power_.energy_at(z.t, false);
  if (!pa || !pt || !pz) return std::nullopt;
  const double span = *pz - *pa;
  if (!(span > 1e-9)) return std::nullopt;
  double e = a.energy_j + (z.energy_j - a.energy_j) * (*pt - *pa) / span;
  // When one side of t was read densely (the reads right after a boundary) and the other was
  // not, the dense side's power integral, scaled to agree with the counter over the run, places
  // the energy better than the proportion above, which the sparse side's error would skew.
  if (power_instant_) {
    const bool dense_before = power_.max_gap(a.t, t) <= kDenseGapS;
    const bool dense_after = power_.max_gap(t, z.t) <= kDenseGapS;
    const double k = calibration();
    if (dense_after && !dense_before) {
      e = z.energy_j - k * (*pz - *pt);
    } else if (dense_before && !dense_after) {
      e = a.energy_j + k * (*pt - *pa);
    }
  }
  return std::clamp(e, a.energy_j, z.energy_j);
}

std::optional<double> device_timeline::beyond_last_anchor(double t) const {
  // Past the counter's last update (a run that ended before the counter advanced again, a GPU
  // lost or a counter that stopped): the power readings since that update say what was used, an
  // idle GPU's 0 W included.  The slope of the last two updates would assume the GPU stayed as
  // busy as it was.
  const auto& anchors = counter_.anchors();
  if (anchors.empty() || power_.empty() || t <= anchors.back().t) return std::nullopt;
  if (counter_.model() == counter_track::model_kind::continuous && t <= counter_.last_read_t()) {
    return std::nullopt;  // the counter itself says: flat up to its last read
  }
  const energy_anchor& last = anchors.back();
  const auto p_last = power_.energy_at(last.t, true);
  const auto p_t = power_.energy_at(t, true);
  if (!p_last || !p_t) return std::nullopt;
  return last.energy_j + std::max(0.0, calibration() * (*p_t - *p_last));
}

void device_timeline::calibrate() {
  // Counter energy over power integral, over spans read densely on both sides (the bursts):
  // NVML's counter and its power readings can disagree by a few percent, and the counter is
  // the reference.  Sparse spans are left out: their power integral misses what happened
  // between readings, which would bias the ratio more than it corrects.
  const auto& anchors = counter_.anchors();
  // Only the anchors placed since the last call: this runs at every reading.
  const auto fresh = std::upper_bound(anchors.begin(), anchors.end(), examined_until_,
                                      [](double t, const energy_anchor& a) { return t < a.t; });
  const auto first = static_cast<std::size_t>(std::max<std::ptrdiff_t>(1, fresh - anchors.begin()));
  for (std::size_t i = first; i < anchors.size(); ++i) {
    const energy_anchor& a = anchors[i - 1];
    const energy_anchor& z = anchors[i];
    if (!power_.covers(z.t)) break;  // not yet: the readings after z decide
    examined_until_ = z.t;
    const bool placed =
        (a.pinned && z.pinned) || counter_.model() == counter_track::model_kind::continuous;
    if (!placed || power_.max_gap(a.t, z.t) > kDenseGapS) continue;
    const auto pa = power_.energy_at(a.t, false);
    const auto pz = power_.energy_at(z.t, false);
    if (!pa || !pz) continue;
    cal_counter_j_ += z.energy_j - a.energy_j;
    cal_power_j_ += *pz - *pa;
  }
}

double device_timeline::calibration() const {
  if (!(cal_power_j_ > kCalibrationMinJ)) return 1.0;
  const double k = cal_counter_j_ / cal_power_j_;
  return k > 0.5 && k < 2.0 ? k : 1.0;
}

energy_method device_timeline::method_between(double t0, double t1) const {
  (void)t0;
  if (initial_method_ == energy_method::counter && counter_stopped_at_ &&
      *counter_stopped_at_ < t1) {
    return energy_method::polled;
  }
  return initial_method_;
}

void device_timeline::trim_before(double t) {
  // Keep what a counter-to-power hand-over still needs.
  if (counter_stopped_at_) t = std::min(t, *counter_stopped_at_);
  counter_.trim_before(t);
  power_.trim_before(t);
}

}  // namespace joules
