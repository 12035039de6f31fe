#include "energy/power_track.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace joules {

void power_track::add(double read_t, double power_w) {
  const double t = read_t - shift_s_;
  if (samples_.empty()) {
    samples_.push_back({t, power_w, 0.0, 0.0});
    return;
  }
  const sample& last = samples_.back();
  if (t <= last.t) return;  // readings of one instant: the first one stands
  samples_.push_back({t, power_w, last.cum + 0.5 * (last.p + power_w) * (t - last.t),
                      last.cum_bound + 0.5 * std::abs(power_w - last.p) * (t - last.t)});
}

std::optional<double> power_track::energy_at(double t, bool extrapolate) const {
  if (samples_.empty()) return std::nullopt;
  const sample& first = samples_.front();
  const sample& last = samples_.back();
  if (t <= first.t) {
    // No earlier sample will ever arrive: holding the first power cannot wait for better data.
    return first.cum - first.p * (first.t - t);
  }
  if (t >= last.t) {
    if (t > last.t && !extrapolate) return std::nullopt;
    return last.cum + last.p * (t - last.t);
  }
  auto it = std::upper_bound(samples_.begin(), samples_.end(), t,
                             [](double x, const sample& s) { return x < s.t; });
  const sample& b = *it;
  const sample& a = *(it - 1);
  const double d = t - a.t;
  const double span = b.t - a.t;
  return a.cum + a.p * d + (b.p - a.p) * d * d / (2.0 * span);
}

double power_track::max_gap(double t0, double t1) const {
  constexpr double kNone = std::numeric_limits<double>::infinity();
  if (samples_.empty() || samples_.front().t > t0 || samples_.back().t < t1) return kNone;
  // The first sample at or after t0: the stretch from t0 to it is interpolated from the sample
  // before t0, however old that one is, but only over that stretch.
  auto it = std::lower_bound(samples_.begin(), samples_.end(), t0,
                             [](const sample& s, double x) { return s.t < x; });
  double gap = it->t - t0;
  for (; it + 1 != samples_.end() && it->t < t1; ++it)
    gap = std::max(gap, std::min((it + 1)->t, t1) - it->t);
  return std::min(gap, t1 - t0);
}

double power_track::bound_before(double t) const {
  if (samples_.empty() || t <= samples_.front().t) return 0.0;
  auto it = std::upper_bound(samples_.begin(), samples_.end(), t,
                             [](double x, const sample& s) { return x < s.t; });
  return (it - 1)->cum_bound;  // the last sample at or before t
}

double power_track::bound_edge(double t) const {
  if (samples_.empty()) return 0.0;
  const sample& first = samples_.front();
  const sample& last = samples_.back();
  if (t < first.t) return first.p * (first.t - t);
  if (t >= last.t) return last.p * (t - last.t);
  auto it = std::upper_bound(samples_.begin(), samples_.end(), t,
                             [](double x, const sample& s) { return x < s.t; });
  const sample& b = *it;
  const sample& a = *(it - 1);
  return std::abs(b.p - a.p) * (b.t - a.t);
}

std::optional<power_track::stretch> power_track::stretch_at(double t) const {
  if (samples_.empty() || t < samples_.front().t || t >= samples_.back().t) return std::nullopt;
  auto it = std::upper_bound(samples_.begin(), samples_.end(), t,
                             [](double x, const sample& s) { return x < s.t; });
  const sample& b = *it;
  const sample& a = *(it - 1);
  return stretch{a.t, b.t, a.p, b.p};
}

std::optional<double> power_track::max_power(double t0, double t1) const {
  if (samples_.empty()) return std::nullopt;
  // From the last reading at or before t0 to the first at or after t1.
  auto from = std::upper_bound(samples_.begin(), samples_.end(), t0,
                               [](double x, const sample& s) { return x < s.t; });
  if (from != samples_.begin()) --from;
  double most = from->p;
  for (auto it = from; it != samples_.end(); ++it) {
    most = std::max(most, it->p);
    if (it->t >= t1) break;
  }
  return most;
}

void power_track::trim_before(double t) {
  while (samples_.size() >= 3 && samples_[1].t <= t)
    samples_.pop_front();
}

}  // namespace joules
