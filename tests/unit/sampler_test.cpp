// The sampler's schedule in virtual time: its ticks, its bursts of dense reads, and what they
// teach it about each energy counter.  Energies are in sampler_energy_test.cpp, windows and
// snapshots in sampler_windows_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "sampler_harness.hpp"

namespace joules::testing {
namespace {

// A run of reads at most `gap` apart, of at least `min_reads` reads: a burst.
struct burst {
  double first;
  double last;
  std::size_t reads;
};
std::vector<burst> bursts(const std::vector<double>& reads, double gap, std::size_t min_reads = 5) {
  std::vector<burst> out;
  for (std::size_t i = 0; i < reads.size();) {
    std::size_t j = i;
    while (j + 1 < reads.size() && reads[j + 1] - reads[j] <= gap + kNs)
      ++j;
    if (j - i + 1 >= min_reads) out.push_back({reads[i], reads[j], j - i + 1});
    i = j + 1;
  }
  return out;
}

TEST(Sampler, TicksStayOnTheGridWhateverTheirReadsCostAndAnOverrunSkipsSlots) {
  // Every read takes 7 ms; the one of the tick at 0.307 s takes 250 ms.  `next = now + period`
  // would drift 7 ms a tick; the grid does not, and the overrun skips the slots it covered.
  scripted_device d;
  d.info = scripted_gpu(0);
  d.info.has_energy_counter = false;  // power only: no burst at start
  d.read_s = [](double t) { return t > 0.3 && t < 0.4 ? 0.25 : 0.007; };
  sampler_harness h({d});
  h.start();
  h.run_until(1.0);
  const auto reads = h.truth().read_times(0);
  // The first read at 0 (start), then the grid from where it ended: 0.007 + k * 0.1.
  const std::vector<double> want = {0.0, 0.107, 0.207, 0.307, 0.607, 0.707, 0.807, 0.907};
  ASSERT_EQ(reads.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(reads[i], want[i], kNs) << i;
  EXPECT_EQ(h.sampler().ticks(), want.size());
}

TEST(Sampler, AReadStretchedByPreemptionIsTakenAgainAndTheTightestKept) {
  // Reads take 7 ms; the one of the tick at 0.307 s takes 40 ms (the thread was preempted): it
  // places its values only within 40 ms, so it is read again at once (7 ms), and that read is
  // the tick's.  The grid goes on from 0.407 s.
  scripted_device d;
  d.info = scripted_gpu(0);
  d.info.has_energy_counter = false;
  d.read_s = [](double t) { return t > 0.3 && t < 0.31 ? 0.04 : 0.007; };
  sampler_harness h({d});
  h.start();
  h.run_until(0.7);
  const auto reads = h.truth().read_times(0);
  const std::vector<double> want = {0.0, 0.107, 0.207, 0.307, 0.347, 0.407, 0.507, 0.607};
  ASSERT_EQ(reads.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(reads[i], want[i], kNs) << i;
  EXPECT_EQ(h.sampler().ticks(), want.size() - 1);
}

TEST(Sampler, ADeviceThatBecomesSlowerIsReadAgainOnlyOnce) {
  // Reads take 2 ms, then 20 ms from 0.3 s on.  The first slow read looks preempted and is taken
  // twice more; all three as slow say the device itself is slower now, and no read after them is
  // taken again.
  scripted_device d;
  d.info = scripted_gpu(0);
  d.info.has_energy_counter = false;
  d.read_s = [](double t) { return t > 0.3 ? 0.02 : 0.002; };
  sampler_harness h({d});
  h.start();
  h.run_until(2.0);
  const std::size_t fast_reads =
      h.truth().read_times(0).size() - h.truth().read_times(0, 0.3).size();
  const std::size_t slow_ticks = h.sampler().ticks() - fast_reads;
  EXPECT_EQ(h.truth().read_times(0, 0.3).size(), slow_ticks + 2);
  EXPECT_EQ(h.truth().read_times(0, 0.4).size(), slow_ticks - 1);
}

TEST(Sampler, TheStartBurstLearnsASteppedCountersPeriodAndPhase) {
  // Updates every 100 ms at 37.5 ms + k * 100 ms; the burst reads every millisecond until it has
  // seen four of them (the fourth at 337.5 ms, first seen at 338 ms), then stops.  Once two
  // updates in a row are pinned (37.5 and 137.5 ms), it rests until 13 ms (two 4 ms brackets
  // and 5 % of the gap) before the next one it predicts: 14 reads each for the third and the
  // fourth, 167 in all where reading all the way took 339.
  sampler_harness h({stepped_gpu(0, 0.1, 0.0375)});
  h.start();
  h.run_until(0.6);
  const auto reads = h.truth().read_times(0);
  const auto found = bursts(reads, 0.001);
  ASSERT_EQ(found.size(), 3U);
  const std::vector<burst> want = {{0.0, 0.138, 139}, {0.225, 0.238, 14}, {0.325, 0.338, 14}};
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(found[i].first, want[i].first, kNs) << i;
    EXPECT_NEAR(found[i].last, want[i].last, kNs) << i;
    // The last one also holds the tick due at 0.1 s, late, at once.
    EXPECT_EQ(found[i].reads, want[i].reads + (i == 2 ? 1 : 0)) << i;
  }
  // No read in the rests; the next on the grid at 0.4 s.
  EXPECT_EQ(reads.size(), 139U + 14U + 15U + 3U);
  EXPECT_NEAR(reads[139 + 14 + 15], 0.4, kNs);
  const counter_track& c = h.timeline(0).counter();
  ASSERT_EQ(c.model(), counter_track::model_kind::periodic);
  EXPECT_NEAR(c.period_s(), 0.1, 1e-9);
  // Each update pinned to the middle of the 1 ms bracket around it: the phase is exact.
  const auto next = c.next_update_after(kOriginS + 0.6);
  ASSERT_TRUE(next);
  EXPECT_NEAR(*next - kOriginS, 0.6375, 1e-9);
}

TEST(Sampler, AnUpdateDuringTheStartBurstsRestEndsTheRest) {
  // The GPU draws nothing from 0.03 to 0.14 s: the update at 0.1375 s leaves the counter as it
  // was, and the two pinned updates (0.0375 and 0.2375 s) are 200 ms apart.  Resting until the
  // one they predict (0.4375 s), the burst still reads the device when a tick would (0.338 s),
  // sees the update of 0.3375 s there, late, and reads densely again until its 350 ms are up.
  // The late change has no update of a 200 ms grid in its bracket: the period is 100 ms.
  scripted_device d = stepped_gpu(0, 0.1, 0.0375);
  d.power = {{0.0, 300.0}, {0.03, 0.0}, {0.14, 300.0}};
  sampler_harness h({d});
  h.start();
  h.run_until(0.6);
  const auto found = bursts(h.truth().read_times(0), 0.001);
  ASSERT_EQ(found.size(), 2U);
  EXPECT_NEAR(found[0].last, 0.238, kNs);
  EXPECT_NEAR(found[1].first, 0.338, kNs);
  EXPECT_NEAR(found[1].last, 0.349, kNs);
  const counter_track& c = h.timeline(0).counter();
  ASSERT_EQ(c.model(), counter_track::model_kind::periodic);
  EXPECT_NEAR(c.period_s(), 0.1, 1e-9);
  EXPECT_NEAR(*c.next_update_after(kOriginS + 0.6) - kOriginS, 0.6375, 1e-9);
}

TEST(Sampler, ABoundaryDuringTheStartBurstsRestIsReadAndTheUpdateAfterItPinned) {
  // The rest before the third update runs from 0.139 to 0.225 s; the boundary at 0.16 s is read
  // at once, and the counter densely from there until it advances (0.2375 s).
  sampler_harness h({stepped_gpu(0, 0.1, 0.0375)});
  h.start();
  boundary_at(h, 0.16);
  h.run_until(0.6);
  const auto found = bursts(h.truth().read_times(0), 0.001);
  ASSERT_EQ(found.size(), 3U);
  EXPECT_NEAR(found[0].last, 0.138, kNs);
  EXPECT_NEAR(found[1].first, 0.16, kNs);
  EXPECT_NEAR(found[1].last, 0.238, kNs);
  EXPECT_NEAR(found[2].first, 0.325, kNs);
}

TEST(Sampler, TheStartBurstTellsAContinuousCounterAfterTenReads) {
  // A counter with a new value at every read: ten reads say so, and no boundary needs more.
  sampler_harness h({stepped_gpu(0, 0.0, 0.0)});
  h.start();
  h.run_until(0.25);
  EXPECT_EQ(h.timeline(0).counter().model(), counter_track::model_kind::continuous);
  h.boundary_then_run(0.45);
  const std::vector<double> want = {0.0,   0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.007,
                                    0.008, 0.009, 0.010, 0.1,   0.2,   0.25,  0.3,   0.4};
  const auto reads = h.truth().read_times(0);
  ASSERT_EQ(reads.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(reads[i], want[i], kNs) << i;
}

TEST(Sampler, AGpuIdleThroughTheStartBurstIsLearntWhenItsCounterStartsMoving) {
  scripted_device d = stepped_gpu(0, 0.1, 0.0375);
  d.power = {{0.0, 0.0}, {2.0, 300.0}};  // idle, then busy from 2 s: first update at 2.0375
  sampler_harness h({d});
  h.start();
  h.run_until(2.05);
  // The start burst ran its full 350 ms and saw nothing move: no model, no more dense reads.
  EXPECT_EQ(h.timeline(0).counter().model(), counter_track::model_kind::unknown);
  auto found = bursts(h.truth().read_times(0), 0.001);
  ASSERT_EQ(found.size(), 1U);
  EXPECT_NEAR(found[0].last, 0.349, kNs);
  // The tick at 2.1 s sees the counter moved: a burst from there learns it.
  h.run_until(3.0);
  // Its first update pinned at 2.1375 s (the tick's read at 2.1 s came long after the read
  // before), the second at 2.2375 s, then rests before the third and the fourth.
  found = bursts(h.truth().read_times(0), 0.001);
  ASSERT_EQ(found.size(), 4U);
  EXPECT_NEAR(found[1].first, 2.1, kNs);
  EXPECT_NEAR(found[1].last, 2.238, kNs);
  EXPECT_EQ(found[1].reads, 139U);
  EXPECT_NEAR(found[2].first, 2.325, kNs);
  EXPECT_NEAR(found[3].last, 2.438, kNs);  // the fourth update seen
  EXPECT_EQ(found[2].reads + found[3].reads, 28U);
  const counter_track& c = h.timeline(0).counter();
  ASSERT_EQ(c.model(), counter_track::model_kind::periodic);
  EXPECT_NEAR(c.period_s(), 0.1, 1e-9);
  EXPECT_NEAR(*c.next_update_after(kOriginS + 3.0) - kOriginS, 3.0375, 1e-9);
}

TEST(Sampler, BurstsThatLearnNothingComeAtMostEvery10sThenBackOffTo10Minutes) {
  // A counter that moves every 500 ms: a 350 ms burst after a tick sees one update, too few to
  // learn a period.  It moved, so the next burst may come at once, then after 10 s, then twice
  // as long each time up to 600 s.  Bursts start on ticks (every second) at or after the burst's
  // end plus the wait.
  sampler_options o;
  o.interval = std::chrono::seconds(1);
  sampler_harness h({stepped_gpu(0, 0.5, 0.2)}, o);
  h.start();
  h.run_until(1850.0);
  const auto found = bursts(h.truth().read_times(0), 0.001);
  const std::vector<double> want = {0, 2, 13, 34, 75, 156, 317, 638, 1239, 1840};
  ASSERT_EQ(found.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(found[i].first, want[i], kNs) << i;
    EXPECT_NEAR(found[i].last, want[i] + 0.349, kNs) << i;  // each ran its 350 ms
  }
  EXPECT_EQ(h.timeline(0).counter().model(), counter_track::model_kind::unknown);
}

TEST(Sampler, ADriverTooSlowToPinAnUpdateIsReadDenselyAgainOnlyAfter10Minutes) {
  // Reads take 10 ms: no two reads bracket an update within the widest bracket, 8 ms
  // (counter_track::kWidestBracketS), so no burst can learn the counter.  The next burst waits
  // the longest back-off at once, not 10 s.
  sampler_options o;
  o.interval = std::chrono::seconds(1);
  scripted_device d = stepped_gpu(0, 0.1, 0.0375);
  d.read_s = [](double) { return 0.010; };
  sampler_harness h({d}, o);
  h.start();
  h.run_until(1210.0);
  const auto found = bursts(h.truth().read_times(0), 0.010);
  ASSERT_EQ(found.size(), 3U);
  // Ticks every second from 0.010 s (the end of the first read); each burst starts when the
  // tick that decided it has ended.
  EXPECT_NEAR(found[0].first, 0.011, kNs);
  EXPECT_NEAR(found[1].first, 601.021, kNs);
  EXPECT_NEAR(found[2].first, 1202.021, kNs);
  EXPECT_EQ(h.timeline(0).counter().model(), counter_track::model_kind::unknown);
}

TEST(Sampler, ABurstLastsItsTimeNotItsNumberOfRoundsWhenReadsAreSlow) {
  // An idle GPU (its counter never moves) read in 5 ms: the start burst ends after
  // start_burst_max (350 ms), not after 350 rounds of 5 ms (1.75 s).
  sampler_options o;
  o.interval = std::chrono::seconds(1);
  scripted_device d = stepped_gpu(0, 0.1, 0.0375);
  d.power = {{0.0, 0.0}};
  d.read_s = [](double) { return 0.005; };
  sampler_harness h({d}, o);
  h.start();
  h.run_until(3.0);
  const auto found = bursts(h.truth().read_times(0), 0.005);
  ASSERT_FALSE(found.empty());
  EXPECT_LE(found[0].last - found[0].first, 0.350 + 0.005 + kNs);
}

TEST(Sampler, AfterABoundaryItReadsUntilEverySteppedCounterHasAdvancedOnce) {
  // Two GPUs, updates at 37.5 and 77.5 ms past each 100 ms.  A boundary at 1.01 s: a read at
  // once, every 3 ms until 3 ms before the first predicted update, every millisecond from there
  // until both counters have advanced (the second at 1.0775 s), then the regular tick at 1.1 s.
  sampler_harness h({stepped_gpu(0, 0.1, 0.0375), stepped_gpu(1, 0.1, 0.0775)});
  h.start();
  h.run_until(1.01);
  ASSERT_EQ(h.timeline(1).counter().model(), counter_track::model_kind::periodic);
  h.boundary_then_run(1.2);
  const auto reads = h.truth().read_times(0, 1.01);
  ASSERT_GE(reads.size(), 3U);
  EXPECT_NEAR(reads.front(), 1.01, kNs);
  EXPECT_NEAR(reads[reads.size() - 2], 1.1, kNs);
  EXPECT_NEAR(reads.back(), 1.2, kNs);
  const double last = reads[reads.size() - 3];
  EXPECT_GE(last, 1.0775 - kNs);  // the second counter's update seen...
  EXPECT_LT(last, 1.0785);        // ...by the first read after it
  std::size_t i = 1;
  for (; i + 2 < reads.size() && reads[i] < 1.0344; ++i)
    EXPECT_NEAR(reads[i] - reads[i - 1], 0.003, kNs) << reads[i];
  // Dense from 3 ms before the first predicted update (1.0375 s; the wait is in whole µs).
  EXPECT_NEAR(reads[i], 1.0345, 1e-6);
  for (++i; i + 2 < reads.size(); ++i)
    EXPECT_NEAR(reads[i] - reads[i - 1], 0.001, kNs) << reads[i];
  EXPECT_EQ(h.truth().read_times(1, 1.01), reads);  // a round reads every device
}

}  // namespace
}  // namespace joules::testing
