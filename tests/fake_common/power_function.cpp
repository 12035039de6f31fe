#include "power_function.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace fake_gpu {

power_function power_function::constant(double watts) {
  return piecewise({0.0}, {}, {}, watts, watts);
}

power_function power_function::piecewise(std::vector<double> x, std::vector<double> a,
                                         std::vector<double> b, double before, double after) {
  power_function f;
  f.x_ = std::move(x);
  f.a_ = std::move(a);
  f.b_ = std::move(b);
  f.before_ = before;
  f.after_ = after;
  f.finish();
  return f;
}

power_function power_function::uniform(double start, double dt, std::vector<double> watts) {
  std::vector<double> x;
  x.reserve(watts.size() + 1);
  for (std::size_t i = 0; i <= watts.size(); ++i)
    x.push_back(start + static_cast<double>(i) * dt);
  const double before = watts.front();
  const double after = watts.back();
  power_function f = piecewise(std::move(x), watts, watts, before, after);
  f.uniform_ = true;
  f.start_ = start;
  f.dt_ = dt;
  return f;
}

power_function power_function::square(double low, double high, double period, double duty,
                                      double phase) {
  power_function f;
  f.kind_ = kind::square;
  f.low_ = low;
  f.high_ = high;
  f.period_ = period;
  f.duty_ = duty;
  f.phase_ = phase;
  f.finish();
  return f;
}

void power_function::finish() {
  if (kind_ == kind::table) {
    prefix_.assign(x_.size(), 0.0);
    for (std::size_t i = 0; i + 1 < x_.size(); ++i) {
      prefix_[i + 1] = prefix_[i] + (x_[i + 1] - x_[i]) * (a_[i] + b_[i]) / 2.0;
    }
  }
  primitive_at_zero_ = primitive(0.0);
}

std::ptrdiff_t power_function::interval_of(double t) const {
  const auto intervals = static_cast<std::ptrdiff_t>(x_.size()) - 1;
  if (uniform_) {
    const double i = std::floor((t - start_) / dt_);
    if (i < 0.0) return -1;
    if (i >= static_cast<double>(intervals)) return intervals;
    return static_cast<std::ptrdiff_t>(i);
  }
  // Last breakpoint <= t; with repeated breakpoints (a jump) the later one wins.
  const auto it = std::upper_bound(x_.begin(), x_.end(), t);
  return std::min<std::ptrdiff_t>(it - x_.begin() - 1, intervals);
}

double power_function::watts_at(double t) const {
  if (kind_ == kind::square) {
    const double u = (t - phase_) / period_;
    const double f = u - std::floor(u);
    return f < duty_ ? high_ : low_;
  }
  const std::ptrdiff_t i = interval_of(t);
  if (i < 0) return before_;
  const auto k = static_cast<std::size_t>(i);
  if (k + 1 >= x_.size()) return after_;
  return a_[k] + (b_[k] - a_[k]) * (t - x_[k]) / (x_[k + 1] - x_[k]);
}

double power_function::primitive(double t) const {
  if (kind_ == kind::square) {
    const double u = (t - phase_) / period_;
    const double k = std::floor(u);
    const double f = u - k;
    const double per_period = duty_ * high_ + (1.0 - duty_) * low_;
    const double part = f < duty_ ? f * high_ : duty_ * high_ + (f - duty_) * low_;
    return period_ * (k * per_period + part);
  }
  const std::ptrdiff_t i = interval_of(t);
  if (i < 0) return (t - x_[0]) * before_;
  const auto k = static_cast<std::size_t>(i);
  if (k + 1 >= x_.size()) return prefix_[k] + (t - x_[k]) * after_;
  const double p = a_[k] + (b_[k] - a_[k]) * (t - x_[k]) / (x_[k + 1] - x_[k]);
  return prefix_[k] + (t - x_[k]) * (a_[k] + p) / 2.0;
}

power_function power_function::clamped(double limit_w) const {
  const double l = limit_w;
  if (kind_ == kind::square) {
    return square(std::min(low_, l), std::min(high_, l), period_, duty_, phase_);
  }
  if (uniform_) {
    std::vector<double> watts(a_);
    for (double& w : watts)
      w = std::min(w, l);
    return uniform(start_, dt_, std::move(watts));
  }
  std::vector<double> x{x_[0]}, a, b;
  auto push = [&](double left, double right, double end) {
    a.push_back(left);
    b.push_back(right);
    x.push_back(end);
  };
  for (std::size_t i = 0; i + 1 < x_.size(); ++i) {
    const double ai = a_[i], bi = b_[i], x0 = x_[i], x1 = x_[i + 1];
    if (ai <= l && bi <= l) {
      push(ai, bi, x1);
    } else if (ai >= l && bi >= l) {
      push(l, l, x1);
    } else {
      // A linear piece crossing the limit: split where it meets it (kept inside the piece
      // despite rounding, so the breakpoints stay sorted).
      const double xc = std::min(std::max(x0 + (l - ai) * (x1 - x0) / (bi - ai), x0), x1);
      if (ai < l) {
        push(ai, l, xc);
        push(l, l, x1);
      } else {
        push(l, l, xc);
        push(l, bi, x1);
      }
    }
  }
  return piecewise(std::move(x), std::move(a), std::move(b), std::min(before_, l),
                   std::min(after_, l));
}

}  // namespace fake_gpu
