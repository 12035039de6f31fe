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

}  // namespace
}  // namespace joules
