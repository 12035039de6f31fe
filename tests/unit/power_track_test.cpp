#include "energy/power_track.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace joules {
namespace {

TEST(PowerTrack, IntegratesLinearPowerExactlyAtAnyInstant) {
  power_track p;
  // P(t) = 100 + 10 t, sampled every 0.1 s: the trapezoid rule is exact for it.
  for (int i = 0; i <= 50; ++i) {
    const double t = 0.1 * i;
    p.add(t, 100.0 + 10.0 * t);
  }
  auto exact = [](double t) { return 100.0 * t + 5.0 * t * t; };
  for (double t : {0.0, 0.05, 1.234, 4.99, 5.0}) {
    const auto e = p.energy_at(t, false);
    ASSERT_TRUE(e);
    EXPECT_NEAR(*e, exact(t), 1e-9) << t;
  }
}

TEST(PowerTrack, AWindowShorterThanThePollPeriodGetsItsShare) {
  power_track p;
  p.add(0.0, 400.0);
  p.add(0.1, 400.0);
  const auto a = p.energy_at(0.030, false);
  const auto b = p.energy_at(0.070, false);
  ASSERT_TRUE(a && b);
  EXPECT_NEAR(*b - *a, 16.0, 1e-9);  // 40 ms at 400 W
}

TEST(PowerTrack, EdgesHoldTheNearestPowerOnlyWhenAllowed) {
  power_track p;
  p.add(1.0, 200.0);
  p.add(2.0, 300.0);
  EXPECT_FALSE(p.energy_at(2.5, false));
  EXPECT_NEAR(*p.energy_at(2.5, true), 250.0 + 150.0, 1e-9);
  EXPECT_NEAR(*p.energy_at(0.5, true), -100.0, 1e-9);
}

TEST(PowerTrack, AveragedReadingsArePlacedAtTheMiddleOfTheirWindow) {
  power_track p(1.0);  // a 1 s average, read at t describes t - 0.5
  p.add(10.0, 100.0);
  EXPECT_TRUE(p.covers(9.5));
  EXPECT_FALSE(p.covers(9.6));
}

TEST(PowerTrack, MaxGapIsTheLongestStretchWithoutASampleInsideTheSpan) {
  power_track p;
  p.add(0.0, 100.0);
  p.add(0.1, 100.0);  // a sparse tick...
  for (int i = 1; i <= 10; ++i)
    p.add(0.1 + 0.002 * i, 100.0);  // ...then dense readings
  // Only the 0.1 ms from 0.0999 to the tick at 0.1 is interpolated from the sample 100 ms back.
  EXPECT_NEAR(p.max_gap(0.0999, 0.115), 0.002, 1e-12);
  EXPECT_NEAR(p.max_gap(0.05, 0.115), 0.05, 1e-12);
  EXPECT_NEAR(p.max_gap(0.1001, 0.1002), 0.0001, 1e-12);
  EXPECT_TRUE(std::isinf(p.max_gap(-0.1, 0.05)));
  EXPECT_TRUE(std::isinf(p.max_gap(0.05, 0.5)));
}

TEST(PowerTrack, ErrorBoundsHoldWhenPowerMovesMonotonicallyBetweenReadings) {
  // Power steps once between readings (100 -> 400 W at 0.013 s, 400 -> 250 W at 0.031 s), read
  // every 10 ms: the truth lies within the trapezoids' bound, and the bound is the rule's.
  const auto truth = [](double t) {
    if (t < 0.013) return 100.0 * t;
    if (t < 0.031) return 1.3 + 400.0 * (t - 0.013);
    return 1.3 + 7.2 + 250.0 * (t - 0.031);
  };
  const auto power = [](double t) { return t < 0.013 ? 100.0 : t < 0.031 ? 400.0 : 250.0; };
  power_track p;
  for (double t = 0.0; t <= 0.0501; t += 0.01)
    p.add(t, power(t));
  EXPECT_NEAR(p.bound_before(0.025), 0.5 * 300.0 * 0.01, 1e-9);
  EXPECT_NEAR(p.bound_edge(0.035), 150.0 * 0.01, 1e-9);
  for (double t0 : {0.0, 0.004, 0.012, 0.02, 0.033}) {
    for (double t1 : {0.014, 0.026, 0.037, 0.05}) {
      if (t1 <= t0) continue;
      const double e = *p.energy_at(t1, false) - *p.energy_at(t0, false);
      const double bound =
          p.bound_before(t1) - p.bound_before(t0) + p.bound_edge(t0) + p.bound_edge(t1);
      EXPECT_LE(std::abs(e - (truth(t1) - truth(t0))), bound + 1e-12) << t0 << " " << t1;
    }
  }
  const auto s = p.stretch_at(0.025);
  ASSERT_TRUE(s);
  EXPECT_DOUBLE_EQ(s->p0, 400.0);
  EXPECT_FALSE(p.stretch_at(0.06));
  EXPECT_DOUBLE_EQ(*p.max_power(0.021, 0.024), 400.0);
}

}  // namespace
}  // namespace joules
