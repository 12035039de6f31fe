#include "energy/device_timeline.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace joules {

device_timeline::device_timeline(const device_info& info)
    : initial_method_(info.method()),
      use_counter_(info.has_energy_counter),
      power_instant_(info.power != power_source::none && !info.power_window),
      has_power_(info.power != power_source::none),
      power_(info.power_window ? info.power_window->count() : 0.0) {
  if (info.power_limit) power_limit_w_ = std::max(power_limit_w_, info.power_limit->value);
  if (info.max_power_limit) power_limit_w_ = std::max(power_limit_w_, info.max_power_limit->value);
  if (info.wrap) counter_.set_wrap(info.wrap->modulus, info.wrap->max_power.value);
  counter_.set_unit_uj(info.counter_unit_uj);
  if (info.counter_continuous) counter_.set_continuous();
}

void device_timeline::add(double t, const device_reading& r, double read_span_s) {
  if (lost_at_ || silent_at_) return;
  if (read_span_s > 0.0) read_spans_.emplace_back(t, read_span_s);
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

namespace {

// A counter reading is the energy rounded down to the counter's unit (1 mJ on NVML): an
// interpolation between two of them is off by less than one unit.
constexpr double kCounterUnitJ = 0.001;
constexpr double kNoTimeBound = -std::numeric_limits<double>::infinity();

}  // namespace

std::optional<double> device_timeline::energy_at(double t, bool final) const {
  const auto e = estimate(t, final, /*bound=*/false);
  return e ? std::optional<double>(e->energy_j) : std::nullopt;
}

std::optional<energy_estimate> device_timeline::estimate_at(double t, bool final) const {
  return estimate(t, final, /*bound=*/true);
}

std::optional<energy_estimate> device_timeline::estimate(double t, bool final, bool bound) const {
  if (!has_good_read_)
    return final ? std::optional<energy_estimate>(energy_estimate{}) : std::nullopt;
  // After loss, nothing is known past the last good reading.
  const bool frozen = lost_at_.has_value() || silent_at_.has_value();
  if (frozen) t = std::min(t, last_good_t_);
  const bool extrapolate = final || frozen;
  const auto rate = power_.last_power_w();
  energy_estimate out;

  if (!use_counter_) {
    const auto e = power_.energy_at(t, extrapolate);
    if (!e) return std::nullopt;
    out.energy_j = *e;
    if (bound) {
      out.cumulative_error_j = power_.bound_before(t);
      out.edge_error_j = power_.bound_edge(t) + power_near(t, t, 0.0) * 0.5 * read_span_near(t, t);
    }
    return out;
  }
  if (!counter_stopped_at_ || t <= *counter_stopped_at_) {
    const auto e = counter_energy(t, extrapolate, bound ? &out.edge_error_j : nullptr);
    if (!e) return std::nullopt;
    out.energy_j = *e;
    return out;
  }
  const double ts = *counter_stopped_at_;
  const auto at_switch = counter_.energy_at(ts, rate.value_or(0.0));
  const auto p_switch = power_.energy_at(ts, true);
  const auto p_now = power_.energy_at(t, extrapolate);
  if (!at_switch) return std::nullopt;
  const double switch_error = bound ? counter_error(ts, rate.value_or(0.0)) : 0.0;
  if (!p_switch || !p_now) {
    if (!extrapolate) return std::nullopt;
    out.energy_j = *at_switch;
    out.edge_error_j = switch_error;
    return out;
  }
  out.energy_j = *at_switch + (*p_now - *p_switch);
  if (bound) {
    // The hand-over's error belongs to every window that spans it: it is cumulative from there.
    out.cumulative_error_j = switch_error + power_.bound_edge(ts) +
                             std::max(0.0, power_.bound_before(t) - power_.bound_before(ts));
    out.edge_error_j = power_.bound_edge(t);
  }
  return out;
}

std::optional<double> device_timeline::counter_energy(double t, bool extrapolate,
                                                      double* error) const {
  if (auto shaped = shaped_by_power(t, error)) return shaped;
  if (extrapolate) {
    if (auto beyond = beyond_last_anchor(t, error)) return beyond;
  }
  std::optional<double> fallback;
  if (extrapolate) fallback = power_.last_power_w().value_or(0.0);
  const auto e = counter_.energy_at(t, fallback);
  if (e && error != nullptr) *error = counter_error(t, fallback);
  return e;
}

double device_timeline::read_span_near(double t0, double t1) const {
  constexpr double kNearS = 0.005;  // the reads that bracket an anchor
  double most = 0.0;
  bool any = false;
  auto it =
      std::lower_bound(read_spans_.begin(), read_spans_.end(), t0 - kNearS,
                       [](const std::pair<double, double>& r, double x) { return r.first < x; });
  for (; it != read_spans_.end() && it->first <= t1 + kNearS; ++it) {
    most = std::max(most, it->second);
    any = true;
  }
  if (!any) {
    for (const auto& r : read_spans_)
      most = std::max(most, r.second);
  }
  return most;
}

double device_timeline::power_near(double t0, double t1, double counter_rate_w) const {
  return std::max(power_.max_power(t0, t1).value_or(0.0), counter_rate_w);
}

double device_timeline::power_cap(double t) const {
  return std::max(power_limit_w_, power_.max_power(t, t).value_or(0.0));
}

double device_timeline::integral_bound(double t0, double t1) const {
  double out = 0.0;
  double t = t0;
  while (t < t1) {
    const auto s = power_.stretch_at(t);
    if (!s) {
      // Before the first reading or past the last: power held, the energy there all error.
      const auto first = power_.first_t();
      const double end = first && t < *first ? std::min(*first, t1) : t1;
      out += (end - t) * power_cap(t);
      t = end;
      continue;
    }
    const double end = std::min(s->t1, t1);
    const double h = end - t;
    const double dp = std::abs(s->p1 - s->p0);
    if (s->t1 - s->t0 > kDenseGapS) {
      out += h * std::max({power_limit_w_, s->p0, s->p1});
    } else if (t == s->t0 && end == s->t1) {
      out += 0.5 * h * dp;  // a whole stretch
    } else {
      out += h * dp;
    }
    t = end;
  }
  return out;
}

double device_timeline::anchor_uncertainty(const energy_anchor& a) const {
  const double reads = 0.5 * read_span_near(a.t, a.t);
  // A continuous counter's value is the energy at the read that showed it.
  if (counter_.model() == counter_track::model_kind::continuous) return reads;
  if (a.lo == kNoTimeBound) {
    // The first value seen: produced at some update before its read.
    const double period = counter_.period_s() > 0.0 ? counter_.period_s() : 0.1;
    return std::max(a.hi - a.t, 0.0) + period + reads;
  }
  if (a.pinned) return 0.5 * (a.hi - a.lo) + reads;
  return std::max(a.t - a.lo, a.hi - a.t) + reads;
}

double device_timeline::counter_error(double t, std::optional<double> rate) const {
  const auto& anchors = counter_.anchors();
  if (anchors.empty()) return 0.0;
  const energy_anchor& first = anchors.front();
  const energy_anchor& last = anchors.back();
  const double r = rate.value_or(0.0);
  if (const auto b = counter_.bracket(t); b && t != last.t) {
    // Interpolated along a straight line: the energy between the two anchors may have been
    // spent anywhere between them.
    const auto& [a, z] = *b;
    const double da = anchor_uncertainty(a);
    const double dz = anchor_uncertainty(z);
    const double avg = z.t > a.t ? (z.energy_j - a.energy_j) / (z.t - a.t) : 0.0;
    return (z.energy_j - a.energy_j) + power_near(a.t - da, z.t + dz, avg) * std::max(da, dz) +
           kCounterUnitJ;
  }
  if (t < first.t) {
    const double d = anchor_uncertainty(first);
    const double slope = anchors.size() >= 2 && anchors[1].t > first.t
                             ? (anchors[1].energy_j - first.energy_j) / (anchors[1].t - first.t)
                             : r;
    return std::max(slope, r) * ((first.t - t) + d) + kCounterUnitJ;
  }
  // At or past the last anchor.  A continuous counter is known flat up to its last read.
  const double d = anchor_uncertainty(last);
  double beyond = std::max(0.0, t - last.t);
  if (counter_.model() == counter_track::model_kind::continuous)
    beyond = std::max(0.0, t - counter_.last_read_t());
  return power_near(last.t - d, t, r) * (beyond + d) + kCounterUnitJ;
}

std::optional<double> device_timeline::shaped_by_power(double t, double* error) const {
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
  // Which readings placed the energy (for the error bound): both anchors and the power between
  // them, or one anchor and the power between it and t.
  enum class side { both, after, before } used = side::both;
  // When one side of t was read densely (the reads right after a boundary) and the other was
  // not, the dense side's power integral, scaled to agree with the counter over the run, places
  // the energy better than the proportion above, which the sparse side's error would skew.
  const double k = calibration();
  if (power_instant_) {
    const bool dense_before = power_.max_gap(a.t, t) <= kDenseGapS;
    const bool dense_after = power_.max_gap(t, z.t) <= kDenseGapS;
    if (dense_after && !dense_before) {
      e = z.energy_j - k * (*pz - *pt);
      used = side::after;
    } else if (dense_before && !dense_after) {
      e = a.energy_j + k * (*pt - *pa);
      used = side::before;
    }
  }
  if (error != nullptr) {
    // The anchors' instants are known to within their uncertainty, and the power integral
    // between readings to within power_track's bound.
    const double da = anchor_uncertainty(a);
    const double dz = anchor_uncertainty(z);
    const double avg = z.t > a.t ? (z.energy_j - a.energy_j) / (z.t - a.t) : 0.0;
    const double p = power_near(a.t - da, z.t + dz, avg);
    const double scale = std::max(k, (z.energy_j - a.energy_j) / span);
    switch (used) {
      case side::after:
        *error = p * dz + k * integral_bound(t, z.t);
        break;
      case side::before:
        *error = p * da + k * integral_bound(a.t, t);
        break;
      case side::both:
        // The split of the counter's energy between the two sides follows the power readings:
        // off by at most their integral's error, and never by more than all of it.
        *error = p * std::max(da, dz) +
                 std::min(z.energy_j - a.energy_j, scale * integral_bound(a.t, z.t));
        break;
    }
    *error += kCounterUnitJ;
  }
  return std::clamp(e, a.energy_j, z.energy_j);
}

std::optional<double> device_timeline::beyond_last_anchor(double t, double* error) const {
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
  if (error != nullptr) {
    const double d = anchor_uncertainty(last);
    *error = power_near(last.t - d, t, 0.0) * d + calibration() * integral_bound(last.t, t) +
             kCounterUnitJ;
  }
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
  while (read_spans_.size() >= 2 && read_spans_[1].first <= t)
    read_spans_.pop_front();
}

}  // namespace joules
