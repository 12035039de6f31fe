#pragma once
// A device's power draw P(t) in watts and its exact integral, in closed form.
//
// Every scenario power function (constant, steps, segments, linear) is stored as one
// piecewise-linear table with prefix sums, and `square` as a periodic wave, so that evaluating
// P(t) or the integral is a binary search (or an O(1) index for uniform segments) plus a few
// flops: joules' CPU cost is measured with this library in-process.
//
// tests/fake_common/power.py repeats every formula here operation for operation, so that Python
// and C++ produce the same doubles; change both together.

#include <cstddef>
#include <vector>

namespace fake_gpu {

class power_function {
 public:
  // P(t) = watts everywhere.
  static power_function constant(double watts);
  // Piecewise linear through breakpoints x[i] (ascending, at least one); interval i runs from
  // x[i] to x[i+1] with value a[i] at its left end and b[i] at its right end; `before` applies
  // for t < x[0] and `after` for t >= x.back().  Steps are intervals with a[i] == b[i].
  static power_function piecewise(std::vector<double> x, std::vector<double> a,
                                  std::vector<double> b, double before, double after);
  // Uniform grid start + i * dt (segments): the interval index is floor((t - start) / dt), as the
  // README specifies, instead of a binary search.
  static power_function uniform(double start, double dt, std::vector<double> watts);
  // high during the first duty * period of every period that starts at phase + k * period.
  static power_function square(double low, double high, double period, double duty, double phase);

  double watts_at(double t) const;
  // E(t) = integral of P over [0, t] in joules (negative for t < 0).
  double energy_j(double t) const { return primitive(t) - primitive_at_zero_; }

  // The same function capped at limit_w: min(P(t), limit_w) with its own exact integral; linear
  // pieces that cross the limit are split at the crossing.
  power_function clamped(double limit_w) const;

 private:
  enum class kind { table, square };

  // Integral from the first breakpoint (table) or from phase (square) to t.
  double primitive(double t) const;
  // Index of the interval that holds t: -1 before x[0], n-1 (== intervals) at or after x.back().
  std::ptrdiff_t interval_of(double t) const;
  void finish();  // fills prefix_ and primitive_at_zero_

  kind kind_ = kind::table;
  // table
  std::vector<double> x_, a_, b_, prefix_;
  double before_ = 0.0;
  double after_ = 0.0;
  bool uniform_ = false;
  double start_ = 0.0;
  double dt_ = 1.0;
  // square
  double low_ = 0.0, high_ = 0.0, period_ = 1.0, duty_ = 0.5, phase_ = 0.0;

  double primitive_at_zero_ = 0.0;
};

}  // namespace fake_gpu
