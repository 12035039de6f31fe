// What the sampler hands out, in virtual time: windows (as they finish and at finish()), their
// conservation, and the live snapshot.
#include <gtest/gtest.h>

#include <chrono>
#include <numeric>
#include <vector>

#include "sampler_harness.hpp"

namespace joules::testing {
namespace {

// Windows follow one another: indices 0, 1, ..., each starting where the last ended.
void expect_contiguous(const std::vector<window_result>& windows, double first, double last) {
  ASSERT_FALSE(windows.empty());
  EXPECT_NEAR(since_origin(windows.front().start_t), first, kNs);
  EXPECT_NEAR(since_origin(windows.back().end_t), last, kNs);
  for (std::size_t i = 0; i < windows.size(); ++i) {
    EXPECT_EQ(windows[i].index, i);
    if (i > 0) {
      EXPECT_EQ(windows[i].start_t, windows[i - 1].end_t) << i;
    }
  }
}

TEST(SamplerWindows, FinishPlacesTheLastBoundaryReadsUntilTheCounterAdvancesAndReturnsAll) {
  // Updates at 37.5 ms past each 100 ms.  The run ends at 2.06 s: finish() reads at once, then
  // until the update at 2.1375 s, and returns the three windows nobody took.
  sampler_harness h({stepped_gpu(0, 0.1, 0.0375)});
  h.start();
  boundary_at(h, 0.51);
  boundary_at(h, 1.01);
  boundary_at(h, 1.51);
  h.run_until(2.06);
  const auto windows = h.finish_at();
  ASSERT_EQ(windows.size(), 3U);
  expect_contiguous(windows, 0.51, 2.06);
  for (const auto& w : windows)
    EXPECT_NEAR(window_j(w, 0), truth_j(h.truth(), 0, w), edge_tolerance_j(300.0)) << w.index;
  const auto last_reads = h.truth().read_times(0, 2.06);
  ASSERT_FALSE(last_reads.empty());
  EXPECT_NEAR(last_reads.front(), 2.06, kNs);
  EXPECT_GE(last_reads.back(), 2.1375 - kNs);  // the update after the end seen...
  EXPECT_LT(last_reads.back(), 2.1385);        // ...by the first read after it, the last read
}

TEST(SamplerWindows, FinishReturnsTheLastWindowEvenWhenNoReadingAfterTheEndCameBack) {
  // Every read fails from 1.9 s: finish()'s reads never see the counter advance, so the energy at
  // the end is known only once the run is over, from the readings before it (at 300 W, as the
  // power read then said).  finish() still returns that window.
  scripted_device d = stepped_gpu(0, 0.1, 0.0375);
  d.errors = {{1.9, 10.0}};
  sampler_harness h({d});
  h.start();
  boundary_at(h, 0.51);
  h.run_until(2.06);
  const auto windows = h.finish_at();
  ASSERT_EQ(windows.size(), 1U);
  expect_contiguous(windows, 0.51, 2.06);
  // The 78 J from the last reading (1.8 s) to the end are extrapolated: within 1 %.
  EXPECT_NEAR(window_j(windows[0], 0), truth_j(h.truth(), 0, windows[0]),
              edge_tolerance_j(300.0) + 0.01 * 300.0 * 0.26);
}

TEST(SamplerWindows, WindowsGoToOnWindowAsSoonAsTheyAreKnownAndFinishReturnsTheRest) {
  sampler_harness h({stepped_gpu(0, 0.1, 0.0375)});
  std::vector<window_result> delivered;  // on the sampler thread; read while it waits
  h.sampler().on_window([&](const window_result& w) { delivered.push_back(w); });
  h.start();
  boundary_at(h, 0.51);
  boundary_at(h, 1.01);
  h.run_until(1.1);
  // The update after 1.01 s (1.0375) pins the boundary; the tick after it attributes the window.
  ASSERT_EQ(delivered.size(), 1U);
  boundary_at(h, 1.51);
  h.run_until(1.6);
  ASSERT_EQ(delivered.size(), 2U);
  // The last window is known during finish()'s reads: on_window gets it too.  Every window
  // comes out once, one way or the other.
  const auto rest = h.finish_at(1.6);
  EXPECT_EQ(delivered.size() + rest.size(), 3U);
  delivered.insert(delivered.end(), rest.begin(), rest.end());
  expect_contiguous(delivered, 0.51, 1.6);
}

TEST(SamplerWindows, WindowsAddUpToTheTotalHoweverManyThereAre) {
  // A boundary every 37 ms for 2.5 s (a training loop's steps, several in one counter period),
  // power stepping in between, and a GPU whose counter is continuous beside a stepped one.  Each
  // boundary's energy is computed once and each window is a difference of two: the sum over 68
  // windows is the energy between the first and last boundary, as exact as any one window is.
  scripted_device a = stepped_gpu(0, 0.1, 0.0375);
  a.power = {{0.0, 300.0}, {1.2345, 650.0}, {2.2, 120.0}, {3.05, 500.0}};
  scripted_device b = stepped_gpu(1, 0.0, 0.0, 150.0);
  sampler_harness h({a, b});
  h.start();
  std::size_t boundaries = 0;
  for (double t = 1.0; t < 3.5 - kNs; t += 0.037, ++boundaries)
    boundary_at(h, t);
  h.run_until(3.5);
  const auto windows = h.finish_at();
  ASSERT_EQ(windows.size(), boundaries);
  expect_contiguous(windows, 1.0, 3.5);
  for (std::size_t d = 0; d < 2; ++d) {
    double sum = 0.0;
    for (const auto& w : windows)
      sum += window_j(w, d);
    const auto& s = h.truth();
    EXPECT_NEAR(sum, s.energy_j(d, 3.5) - s.energy_j(d, 1.0), edge_tolerance_j(650.0)) << d;
  }
  for (const auto& w : windows) {
    const microjoules devices = std::accumulate(
        w.devices.begin(), w.devices.end(), microjoules{0},
        [](microjoules acc, const device_window& dw) { return acc + dw.energy_uj.value_or(0); });
    EXPECT_EQ(w.energy_uj, devices) << w.index;
    EXPECT_NEAR(window_j(w, 0), truth_j(h.truth(), 0, w), edge_tolerance_j(650.0)) << w.index;
    EXPECT_NEAR(window_j(w, 1), truth_j(h.truth(), 1, w), 0.002) << w.index;
  }
}

TEST(SamplerWindows, TheSnapshotIsPublishedAfterEveryRound) {
  // Reads take 0.8 ms (a counter cheap enough to read at every tick; a costlier one is read
  // once a second, src/sampler/sampler.cpp): ticks every 100 ms from 0.8 ms, each snapshot taken
  // at the end of its round.
  scripted_device d = stepped_gpu(0, 0.1, 0.0375);
  d.read_s = [](double) { return 0.0008; };
  sampler_harness h({d});
  EXPECT_EQ(h.sampler().snapshot(), nullptr);  // nothing read yet
  h.start();
  h.run_until(0.55);
  const auto first = h.sampler().snapshot();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->ticks, h.sampler().ticks());
  EXPECT_EQ(first->taken, at(0.5016));
  ASSERT_EQ(first->devices.size(), 1U);
  const auto& g = first->devices[0];
  EXPECT_EQ(g.power_w, 300.0);
  // The counter as read at 0.5012 s: its update at 0.4375 s.
  EXPECT_EQ(g.counter_mj, 5'000'000U + 131'250U);
  // Since the first reading, whose counter value is the energy at 0 (its last update before).
  // Reads 0.8 ms long bracket updates within 0.8 ms: placed within 0.4 ms.
  ASSERT_TRUE(g.energy_j);
  EXPECT_NEAR(*g.energy_j, h.truth().energy_j(0, 0.5012), 300 * 0.0004);
  EXPECT_FALSE(g.lost);

  h.run_until(0.65);
  const auto second = h.sampler().snapshot();
  EXPECT_NE(second, first);  // replaced, not changed: readers keep theirs
  EXPECT_EQ(second->ticks, first->ticks + 1);
  EXPECT_EQ(second->taken, at(0.6016));
  EXPECT_EQ(second->devices[0].counter_mj, 5'000'000U + 161'250U);
}

TEST(SamplerWindows, TheSnapshotCountsTheRoundsOfHealthReadings) {
  // Health every 200 ms: a round at the start, then one at 0.2, 0.4 and 0.6 s.  A rate of two
  // readings (Level Zero's utilisation) is known from the second round on (monitor --once).
  sampler_options o;
  o.health_interval = std::chrono::milliseconds(200);
  sampler_harness h({stepped_gpu(0, 0.0, 0.0)}, o);
  h.start();
  h.run_until(0.1);
  const auto first = h.sampler().snapshot();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->health_rounds, 1U);
  EXPECT_TRUE(first->devices[0].health);
  h.run_until(0.65);
  EXPECT_EQ(h.sampler().snapshot()->health_rounds, 4U);
}

TEST(SamplerWindows, WithoutHealthReadingsTheSnapshotCountsNoRound) {
  sampler_harness h({stepped_gpu(0, 0.0, 0.0)});
  h.start();
  h.run_until(0.35);
  const auto snap = h.sampler().snapshot();
  ASSERT_TRUE(snap);
  EXPECT_EQ(snap->health_rounds, 0U);
  EXPECT_FALSE(snap->devices[0].health);
}

}  // namespace
}  // namespace joules::testing
