#include "energy/counter_track.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

namespace joules {
namespace {

// A device whose counter is the exact integral of a power function, advancing only at
// phase + k * period (period 0: continuously), in whole millijoules.
struct fake_counter {
  std::function<double(double)> energy;  // exact E(t) in J
  double period = 0.0;
  double phase = 0.0;
  std::uint64_t initial_mj = 123456789;

  double update_before(double t) const {
    if (period <= 0.0) return t;
    return phase + std::floor((t - phase) / period) * period;
  }
  std::uint64_t read(double t) const {
    // Signed until the sum: before the first update the energy since the start is negative.
    return static_cast<std::uint64_t>(
        static_cast<std::int64_t>(initial_mj) +
        static_cast<std::int64_t>(std::floor(energy(update_before(t)) * 1000.0)));
  }
};

// Feeds `c` the reads the sampler makes: a start burst every 2 ms, ticks every 100 ms, an end
// burst after `end` until the value changes.
void feed(counter_track& track, const fake_counter& c, double start, double end) {
  double t = start;
  track.begin_burst();
  std::uint64_t first = c.read(t);
  int changes = 0;
  std::uint64_t last = first;
  for (; t < start + 0.35 && changes < 4; t += 0.002) {
    const std::uint64_t v = c.read(t);
    if (v != last) ++changes;
    last = v;
    track.add(t, v, std::nullopt);
  }
  track.end_burst();
  for (t = start + 0.4; t < end; t += 0.1)
    track.add(t, c.read(t), std::nullopt);
  track.add(end + 0.0005, c.read(end + 0.0005), std::nullopt);
  if (track.model() == counter_track::model_kind::periodic) {
    track.begin_burst();
    const std::uint64_t v0 = c.read(end + 0.0005);
    for (t = end + 0.002; t < end + 0.25; t += 0.002) {
      const std::uint64_t v = c.read(t);
      track.add(t, v, std::nullopt);
      if (v != v0) break;
    }
    track.end_burst();
  }
}

TEST(CounterTrack, ReadsThatTakeLongerWidenTheBracketThatPinsAnUpdateUpToTheWidest) {
  // A burst of back-to-back reads that take 5 ms each: no bracket of 4 ms, so the period stays
  // unknown; told that a read takes 5 ms, the track accepts 7.5 ms, and learns it.
  const fake_counter c{[](double t) { return 300.0 * t; }, 0.1, 0.0375};
  const auto learn = [&](double read_span_s, double told_s) {
    counter_track track;
    track.set_read_span(told_s);
    track.begin_burst();
    for (double t = 1.0; t < 1.35; t += read_span_s)
      track.add(t, c.read(t), std::nullopt);
    track.end_burst();
    return track;
  };
  EXPECT_EQ(learn(0.005, 0.0).model(), counter_track::model_kind::unknown);
  const counter_track slow = learn(0.005, 0.005);
  EXPECT_DOUBLE_EQ(slow.narrow_bracket_s(), 0.0075);
  EXPECT_EQ(slow.model(), counter_track::model_kind::periodic);
  EXPECT_NEAR(slow.period_s(), 0.1, 0.005);
  // Pinned anchors are placed to within half a bracket of the true update.
  for (const auto& a : slow.anchors()) {
    if (!a.pinned) continue;
    const double u = c.update_before(a.hi);
    EXPECT_NEAR(a.t, u, 0.5 * 0.0075) << a.hi;
  }
  // Reads slower still never widen it past kWidestBracketS: 10 ms reads learn nothing.
  EXPECT_DOUBLE_EQ(learn(0.010, 0.010).narrow_bracket_s(), counter_track::kWidestBracketS);
  EXPECT_EQ(learn(0.010, 0.010).model(), counter_track::model_kind::unknown);
}

TEST(CounterTrack, ContinuousCounterIsExactBetweenReads) {
  fake_counter c{[](double t) { return 300.0 * t; }};
  counter_track track;
  feed(track, c, 10.0, 15.0);
  EXPECT_EQ(track.model(), counter_track::model_kind::continuous);
  for (double t : {10.0001, 10.5, 12.3456, 14.99}) {
    const auto e = track.energy_at(t, std::nullopt);
    ASSERT_TRUE(e);
    EXPECT_NEAR(*e, 300.0 * (t - 10.0), 0.002) << t;
  }
}

TEST(CounterTrack, SteppedCounterLearnsItsPeriodAndPlacesTheRunEdges) {
  // As on an H100: the counter advances every 100 ms, here at phase 37 ms.
  fake_counter c{[](double t) { return 500.0 * t; }, 0.1, 0.037};
  counter_track track;
  const double start = 20.0;
  const double end = 30.0;
  feed(track, c, start, end);
  ASSERT_EQ(track.model(), counter_track::model_kind::periodic);
  EXPECT_NEAR(track.period_s(), 0.1, 1e-4);
  const auto e0 = track.energy_at(start + 0.0005, 0.0);
  const auto e1 = track.energy_at(end, 0.0);
  ASSERT_TRUE(e0 && e1);
  const double truth = 500.0 * (end - start - 0.0005);
  // Within 0.05 %: the edges are placed within a couple of milliseconds, not a whole period.
  EXPECT_NEAR(*e1 - *e0, truth, truth * 5e-4);
}

TEST(CounterTrack, AnUpdateTheBurstMissedDoesNotStretchThePeriod) {
  // A start burst on a busy machine: the reads around one of the updates came 10 ms apart, so
  // only the updates at 0.137 and 0.337 s are pinned, 0.2 s apart, after the one at 0.037 s.
  // The gaps are 0.1 and 0.2 s: the period is 0.1 s (their median, 0.15 s, is no period at all).
  fake_counter c{[](double t) { return 400.0 * t; }, 0.1, 0.037};
  counter_track track;
  track.begin_burst();
  for (double t = 0.0; t < 0.36; t += 0.002) {
    if (t > 0.225 && t < 0.245) continue;  // the reads around the update at 0.237 s are late
    const double at = t > 0.2 && t < 0.26 ? std::round(t * 100.0) / 100.0 : t;
    track.add(at, c.read(at), std::nullopt);
  }
  track.end_burst();
  ASSERT_EQ(track.model(), counter_track::model_kind::periodic);
  EXPECT_NEAR(track.period_s(), 0.1, 1e-3);
}

TEST(CounterTrack, TwoPinnedUpdatesWithAChangeBetweenThemAreTwoPeriodsApart) {
  // Only the updates at 0.037 and 0.237 s are pinned; the one at 0.137 s was seen, but by reads
  // 10 ms apart.  One gap of 0.2 s with a change inside it: two periods of 0.1 s, not one of 0.2.
  fake_counter c{[](double t) { return 400.0 * t; }, 0.1, 0.037};
  counter_track track;
  track.begin_burst();
  for (double t = 0.0; t < 0.3; t += 0.002) {
    if (t > 0.12 && t < 0.15) {
      if (std::abs(t - 0.13) < 0.001 || std::abs(t - 0.14) < 0.001)
        track.add(t, c.read(t), std::nullopt);
      continue;
    }
    track.add(t, c.read(t), std::nullopt);
  }
  track.end_burst();
  ASSERT_EQ(track.model(), counter_track::model_kind::periodic);
  EXPECT_NEAR(track.period_s(), 0.1, 1e-3);
}

TEST(CounterTrack, AChangeSeenLateOffTheGridOfThePinnedOnesShowsAHiddenUpdate) {
  // Updates every 100 ms from 0.0375 s; the GPU draws nothing from 0.03 to 0.14 s, so the update
  // at 0.1375 s leaves the value as it was.  The burst pins 0.0375 and 0.2375 s, then reads
  // sparsely and sees the change of 0.3375 s at 0.338 s, 100 ms after its read before.  One gap
  // of 0.2 s alone says 0.2 s; the late change, with no update of a 0.2 s grid in its bracket,
  // says 0.1 s.
  fake_counter c{[](double t) { return t < 0.14 ? 400.0 * std::min(t, 0.03) : 400.0 * (t - 0.11); },
                 0.1, 0.0375};
  counter_track track;
  track.begin_burst();
  for (double t = 0.0; t < 0.2385; t += 0.001)
    track.add(t, c.read(t), std::nullopt);
  track.add(0.338, c.read(0.338), std::nullopt);
  track.add(0.345, c.read(0.345), std::nullopt);
  track.end_burst();
  ASSERT_EQ(track.model(), counter_track::model_kind::periodic);
  EXPECT_NEAR(track.period_s(), 0.1, 1e-3);
  const auto next = track.next_update_after(0.5);
  ASSERT_TRUE(next);
  EXPECT_NEAR(*next, 0.5375, 2e-3);
}

TEST(CounterTrack, AFirstValueReadFarFromThePinsIsSettledOnlyOnceThePeriodIsFine) {
  // A costly counter's first value, read 10 s before the burst that learns its period to about
  // a millisecond: carried back a hundred periods, that is a whole update either way, so a
  // boundary beside the value waits.  A pin 10 s after the burst refines the period to a
  // fiftieth of that and settles the value, placed at the update before its read.
  fake_counter c{[](double t) { return 300.0 * t; }, 0.1, 0.037};
  counter_track track;
  track.add(0.0, c.read(0.0), std::nullopt);
  track.begin_burst();
  for (double t = 10.0; t < 10.36; t += 0.001)
    track.add(t, c.read(t), std::nullopt);
  track.end_burst();
  ASSERT_EQ(track.model(), counter_track::model_kind::periodic);
  EXPECT_FALSE(track.settled_at(0.01));
  EXPECT_TRUE(track.settled_at(10.2));
  track.add(20.036, c.read(20.036), std::nullopt);
  track.add(20.038, c.read(20.038), std::nullopt);
  EXPECT_TRUE(track.settled_at(0.01));
  ASSERT_FALSE(track.anchors().empty());
  EXPECT_NEAR(track.anchors().front().t, c.update_before(0.0), 0.005);
}

TEST(CounterTrack, AWrongPeriodIsDoubtedAtThePinItMissesAndRestartedByTheNextPin) {
  // A burst of 4 ms reads whose instants came out 7 % short (a busy machine) learns 93 ms for a
  // counter that advances every 100 ms.  Seven periods on, the model misses the pin by 40 ms:
  // bent to it, it would count eight updates where there were seven and place every later value
  // wrong.  That pin raises doubt; the next one, a period later, restarts the model from the two.
  const fake_counter c{[](double t) { return 300.0 * t; }, 0.1, 0.05};
  counter_track track;
  track.set_read_span(0.004);
  track.begin_burst();
  for (double t = 1.0; t < 1.3; t += 0.004)
    track.add(1.0 + 0.93 * (t - 1.0), c.read(t), std::nullopt);
  track.end_burst();
  ASSERT_EQ(track.model(), counter_track::model_kind::periodic);
  ASSERT_NEAR(track.period_s(), 0.093, 2e-3);
  const auto pin = [&](double u) {
    track.add(u - 0.002, c.read(u - 0.002), std::nullopt);
    track.add(u + 0.002, c.read(u + 0.002), std::nullopt);
  };
  pin(1.75);
  EXPECT_TRUE(track.doubted());
  EXPECT_GE(track.prediction_error_s(1.9), 0.04);  // the update may be anywhere: read around it
  track.add(1.82, c.read(1.82), std::nullopt);
  track.add(1.87, c.read(1.87), std::nullopt);  // the update of 1.85, seen late
  pin(1.95);
  EXPECT_FALSE(track.doubted());
  EXPECT_NEAR(track.period_s(), 0.1, 1e-3);
  const auto next = track.next_update_after(2.3);
  ASSERT_TRUE(next);
  EXPECT_NEAR(*next, 2.35, 3e-3);
  // The value first seen at 1.87 is placed at its update, 1.85, by the restarted model.
  const auto e = track.energy_at(1.9, std::nullopt);
  ASSERT_TRUE(e);
  EXPECT_NEAR(*e, 300.0 * (1.9 - c.update_before(1.0)), 0.5);
}

TEST(CounterTrack, AnUnplacedValueWaitsForItsBracketUntilExtrapolationIsAllowed) {
  fake_counter c{[](double t) { return 100.0 * t; }};
  counter_track track;
  track.add(1.0, c.read(1.0), std::nullopt);
  track.add(1.1, c.read(1.1), std::nullopt);
  EXPECT_FALSE(track.energy_at(1.2, std::nullopt));
  const auto e = track.energy_at(1.2, 0.0);
  ASSERT_TRUE(e);
  EXPECT_NEAR(*e, 20.0, 0.01);  // the rate of the two last anchors
}

TEST(CounterTrack, ResetIsCompensatedAndCounted) {
  counter_track track;
  track.add(1.0, 1'000'000, std::nullopt);
  track.add(2.0, 1'300'000, std::nullopt);  // 300 J in 1 s
  // Driver reloaded in between: the counter restarted and shows 50 J since then.
  EXPECT_TRUE(track.add(3.0, 50'000, 300.0));
  EXPECT_EQ(track.resets(), 1);
  // The gap is estimated from power (300 W x 1 s), not just the 50 J seen since the reset.
  EXPECT_NEAR(track.last_energy_j(), 600.0, 1e-9);
  EXPECT_NEAR(track.reset_estimated_j(), 250.0, 1e-9);
  track.add(4.0, 350'000, std::nullopt);
  EXPECT_NEAR(track.last_energy_j(), 900.0, 1e-9);
}

TEST(CounterTrack, TrimmingKeepsWhatInterpolationNeeds) {
  fake_counter c{[](double t) { return 250.0 * t; }};
  counter_track track;
  for (int i = 0; i < 1000; ++i) {
    const double t = 100.0 + 0.1 * i;
    track.add(t, c.read(t), std::nullopt);
    track.trim_before(t - 0.25);
  }
  EXPECT_LE(track.anchor_count(), 5U);
  const auto e = track.energy_at(199.85, std::nullopt);
  ASSERT_TRUE(e);
  EXPECT_NEAR(*e, 250.0 * 99.85, 0.01);
}

}  // namespace
}  // namespace joules

namespace joules {
namespace {

// AMD's accumulator and Level Zero's µJ counter: 64 bits, so that a wrap is a decrease modulo
// 2^64 (set_wrap(0, ...)).
TEST(CounterTrack64, AWrapAt2To64IsCountedExactlyInCountsOfTheUnit) {
  counter_track c;
  c.set_wrap(0, 5000.0);
  c.set_unit_uj(1e6 / 65536.0);  // AMD: 2^-16 J a count
  c.set_continuous();
  const std::uint64_t start = ~std::uint64_t{0} - 65536 * 3;  // 3 J before the top
  c.add_counts(0.0, start, std::nullopt);
  c.add_counts(0.5, start + 65536, std::nullopt);  // 1 J
  c.add_counts(1.0, 65536 * 2 - 1, std::nullopt);  // wrapped: 4 J more, 5 J in all
  EXPECT_EQ(c.wraps(), 1);
  EXPECT_EQ(c.resets(), 0);
  EXPECT_EQ(c.last_energy_j(), 5.0);
}

TEST(CounterTrack64, ADecreaseNoPowerCouldExplainIsAResetNotAWrap) {
  counter_track c;
  c.set_wrap(0, 5000.0);
  c.set_continuous();
  c.add_uj(0.0, 900'000'000'000ULL, std::nullopt);  // 900 kJ since the driver loaded
  c.add_uj(0.1, 900'000'050'000ULL, std::nullopt);
  // A driver reload: the counter starts again from 0; 2^64 - 9e11 µJ in 0.1 s is no wrap.
  EXPECT_TRUE(c.add_uj(0.2, 20'000, 300.0));
  EXPECT_EQ(c.wraps(), 0);
  EXPECT_EQ(c.resets(), 1);
}

TEST(CounterTrack64, CountsOfAUnitTurnIntoJoulesOnce) {
  counter_track c;
  c.set_unit_uj(15.625);
  c.set_continuous();
  c.add_counts(0.0, 1'000'000, std::nullopt);
  c.add_counts(1.0, 1'064'000, std::nullopt);  // 64000 counts of 15.625 µJ: exactly 1 J
  EXPECT_EQ(c.last_energy_j(), 1.0);
  EXPECT_EQ(*c.energy_at(1.0, std::nullopt), 1.0);
}

}  // namespace
}  // namespace joules
