// The sampler's energy in virtual time, checked against the scripted truth: windows whose edges
// fall inside a counter's update period, wraps and resets, a device lost, the end of a run.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "sampler_harness.hpp"

namespace joules::testing {
namespace {

// A GPU whose counter is as costly as an H100's (docs/nvml-notes.md §2.4): updated every 100 ms,
// 4.3 ms a read, 3 µs a reading of power alone (or as long as a full read: cheap_power false).
constexpr double kCostlyReadS = 0.0043;
scripted_device costly_gpu(unsigned index, double phase, bool cheap_power = true) {
  scripted_device d = stepped_gpu(index, 0.1, phase);
  d.read_s = [](double) { return kCostlyReadS; };
  if (cheap_power) d.power_read_s = [](double) { return 3e-6; };
  return d;
}
// How far such a window's edge may be off at 650 W: half a bracket (one and a half reads) and
// half a read.
constexpr double kCostlyEdgeJ = 650.0 * (0.5 * 1.5 * kCostlyReadS + 0.5 * kCostlyReadS);

// Eight such GPUs, updates at eight phases, each at its own power until `busy_s`, then 650 W
// for 5.25 s, then a lower power of its own.
std::vector<scripted_device> eight_costly_gpus(double busy_s) {
  std::vector<scripted_device> gpus;
  for (unsigned i = 0; i < 8; ++i) {
    scripted_device d = costly_gpu(i, 0.0061 + 0.0123 * i);
    d.power = {{0.0, 300.0 + 40.0 * i}, {busy_s, 650.0}, {busy_s + 5.25, 200.0 + 10.0 * i}};
    gpus.push_back(d);
  }
  return gpus;
}

// How many of the instants `t` fall in [from, to).
long count_between(const std::vector<double>& t, double from, double to) {
  return std::count_if(t.begin(), t.end(), [&](double x) { return x >= from && x < to; });
}

TEST(SamplerEnergy, AWindowWhoseEdgesFallInsideUpdatePeriodsIsExact) {
  // The counter advances every 100.7 ms: the start burst's 1 ms brackets learn 100.67 ms, and by
  // 30 s the phase that predicts is 10 ms off.  The reads after each boundary pin the update
  // after it, and with it the updates around the boundary.  Without them the second boundary
  // would be 3 J off.
  sampler_harness h({stepped_gpu(0, 0.1007, 0.0375)});
  h.start();
  boundary_at(h, 30.01);  // updates at 29.9454 and 30.0461
  boundary_at(h, 30.53);  // 30.4489 and 30.5496
  h.run_until(31.5);
  const auto windows = h.finish_at();  // 31.4559 and 31.5566
  ASSERT_EQ(windows.size(), 2U);
  for (const auto& w : windows)
    EXPECT_NEAR(window_j(w, 0), truth_j(h.truth(), 0, w), edge_tolerance_j(300.0)) << w.index;
}

TEST(SamplerEnergy, ACounterThatTakes4msAReadIsPinnedAndItsWindowsAreExactToItsReads) {
  // NVML's counter on an H100: every read takes about 4 ms (docs/nvml-notes.md §2.4), so two
  // reads are never closer than that; here 4.3 ms, as measured there.  The bracket that pins an
  // update is then one and a half reads: the start burst learns the 100 ms period, and the
  // windows are exact to within half a bracket and half a read at each edge, at 650 W while the
  // power changes inside them.  With the bracket held at 4 ms the counter stayed unlearnt and
  // these windows were 24 J and 32 J off.
  scripted_device d = costly_gpu(0, 0.0375, /*cheap_power=*/false);
  d.power = {{0.0, 300.0}, {12.25, 650.0}, {17.5, 200.0}};
  sampler_harness h({d});
  h.start();
  boundary_at(h, 10.01);
  boundary_at(h, 15.03);
  h.run_until(20.5);
  const auto windows = h.finish_at();
  EXPECT_EQ(h.timeline(0).counter().model(), counter_track::model_kind::periodic);
  EXPECT_NEAR(h.timeline(0).counter().period_s(), 0.1, 1e-4);
  ASSERT_EQ(windows.size(), 2U);
  for (const auto& w : windows)
    EXPECT_NEAR(window_j(w, 0), truth_j(h.truth(), 0, w), 2 * kCostlyEdgeJ) << w.index;
}

TEST(SamplerEnergy, ACostlyCounterIsReadEveryFewSecondsOnTicksAndWindowsStayExact) {
  // Every read of the counter takes 4.3 ms and a read of power alone 3 µs, as on an H100
  // (docs/nvml-notes.md §2.4).  Between boundaries the ticks read the counter every 5 s and
  // power alone between, and the update instants are kept known by pinning one now and then;
  // at a boundary the counter is read once its next update is past.  The windows are as exact
  // as the updates are pinned, though the power changes inside them.
  scripted_device d = costly_gpu(0, 0.0375);
  d.power = {{0.0, 300.0}, {12.25, 650.0}, {17.5, 200.0}};
  sampler_harness h({d});
  h.start();
  boundary_at(h, 10.01);
  boundary_at(h, 15.03);
  h.run_until(20.5);
  const auto windows = h.finish_at();
  const auto reads = h.truth().read_times(0);
  const auto counter = h.truth().counter_read_times(0);
  // From 2 s to 9.9 s: power at each of the 79 ticks (and between, while a repin waits for
  // an update), the counter 12 times: at a tick every 5 s, and by repin(), whose pins come
  // further and further apart, 3 or 4 reads each.  Reading it at every tick would be 79 reads,
  // once a second at a tick 19.
  EXPECT_GE(count_between(reads, 2.0, 9.9), 79);
  EXPECT_LE(count_between(counter, 2.0, 9.9), 13);
  // A boundary reads its counter once the update after it is past (the boundary's own read,
  // close to an update, reads power alone), or at the boundary and after the update: 2 reads.
  EXPECT_LE(count_between(counter, 10.01, 10.21), 2);
  EXPECT_LE(count_between(counter, 15.03, 15.23), 2);
  EXPECT_EQ(h.timeline(0).counter().model(), counter_track::model_kind::periodic);
  ASSERT_EQ(windows.size(), 2U);
  for (const auto& w : windows)
    EXPECT_NEAR(window_j(w, 0), truth_j(h.truth(), 0, w), 2 * kCostlyEdgeJ) << w.index;
}

TEST(SamplerEnergy, EightCostlyCountersArePinnedOneAtATimeAndTheirWindowsAreExact) {
  // Eight H100s: 4.3 ms a counter read, 3 µs a power reading, updates every 100 ms at eight
  // different phases.  A round of all eight counters takes 34 ms, far over any bracket: the
  // start burst reads each counter densely alone, the others' power between, and every one of
  // them learns its period.  At each boundary each counter is read from just before its own
  // predicted update, so that the rounds hold one or two counter reads, not eight, and every
  // device's windows are exact to within its reads.
  sampler_harness h(eight_costly_gpus(12.25));
  h.start();
  boundary_at(h, 10.01);
  boundary_at(h, 15.03);
  boundary_at(h, 15.31);
  h.run_until(20.5);
  const auto windows = h.finish_at();
  ASSERT_EQ(windows.size(), 3U);
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(h.timeline(i).counter().model(), counter_track::model_kind::periodic) << i;
    for (const auto& w : windows)
      EXPECT_NEAR(window_j(w, i), truth_j(h.truth(), i, w), 2 * kCostlyEdgeJ)
          << i << " " << w.index;
    // Around the last two boundaries (the periods refined by the first): a few reads each.
    const auto t = h.truth().counter_read_times(i, 15.03);
    EXPECT_LE(std::count_if(t.begin(), t.end(), [](double x) { return x < 15.5; }), 8) << i;
  }
}

TEST(SamplerEnergy, EightCostlyCountersAreReadEveryFewSecondsInALongRunAndStayExact) {
  // Eight H100s through 110 s.  Between boundaries a tick reads a costly counter at most every
  // 5 s, and repin() pins an update now and then, 3 or 4 reads close to it: from 60 s to 100 s
  // 10 or 11 reads of each counter (at one a second the ticks alone would read it 40 times).
  // Waiting for the update to pin, a repin reads power at the ticks' pace, not every 3 ms: 430
  // readings of each GPU in those 40 s, the 400 ticks' and the pins' dense rounds.  The windows
  // after all that are as exact as a short run's.
  sampler_harness h(eight_costly_gpus(102.25));
  h.start();
  boundary_at(h, 100.01);
  boundary_at(h, 105.03);
  h.run_until(110.5);
  const auto windows = h.finish_at();
  ASSERT_EQ(windows.size(), 2U);
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_LE(count_between(h.truth().counter_read_times(i), 60.0, 100.0), 14) << i;
    EXPECT_LE(count_between(h.truth().read_times(i), 60.0, 100.0), 460) << i;
    for (const auto& w : windows)
      EXPECT_NEAR(window_j(w, i), truth_j(h.truth(), i, w), 2 * kCostlyEdgeJ)
          << i << " " << w.index;
  }
}

TEST(SamplerEnergy, ACheapCounterIsReadAtEveryTick) {
  // 0.2 ms a read: the counter is read with power at every tick.
  scripted_device d = stepped_gpu(0, 0.1, 0.0375);
  d.read_s = [](double) { return 0.0002; };
  sampler_harness h({d});
  h.start();
  h.run_until(5.0);
  EXPECT_EQ(h.truth().counter_read_times(0, 2.0).size(), h.truth().read_times(0, 2.0).size());
}

TEST(SamplerEnergy, AWrapIsCountedAsAWrapAndAZeroedCounterAsAResetWithItsOffsetCarried) {
  // A RAPL package: a µJ counter that wraps at 20 J, at 250 W.  Read every 100 ms it would wrap
  // more than once between reads; the sampler reads it every 25 ms (its max_read_interval), so
  // every wrap is seen.  At 2.11 s the counter is zeroed: from the read before (2.1 s, when it
  // showed 4 J) the drop is more than 400 W could explain, so it is a reset; the energy from
  // 2.1 s to the reset is lost, and counting carries on from there.
  scripted_device d;
  d.info.kind = device_kind::cpu;
  d.info.uuid = "cpu-package-0";
  d.info.has_energy_counter = true;
  d.info.counter_continuous = true;
  d.info.wrap = counter_wrap{20'000'000, watts{400.0}};
  d.info.max_read_interval = seconds(0.025);
  d.energy_uj = true;
  d.counter_start = 19'000'000;
  d.power = {{0.0, 250.0}};
  d.reset_at = 2.11;
  sampler_harness h({d});
  h.start();
  EXPECT_DOUBLE_EQ(h.sampler().interval_s(), 0.025);
  boundary_at(h, 0.5);
  h.run_until(3.0);
  const auto windows = h.finish_at();
  ASSERT_EQ(windows.size(), 1U);
  const double lost = 250.0 * (2.11 - 2.1);
  EXPECT_NEAR(window_j(windows[0], 0), truth_j(h.truth(), 0, windows[0]) - lost, 1e-5);
  const device_timeline& tl = h.timeline(0);
  EXPECT_EQ(tl.counter_resets(), 1);
  // 19 J + 525 J to the reset is 27 turns of 20 J, then 222.5 J is 11 more.
  EXPECT_EQ(tl.counter_wraps(), 38);
}

TEST(SamplerEnergy, AGpuCounterThatGoesBackwardsIsAResetBridgedByPower) {
  // The driver reloads at 1.234 s and the counter restarts from 0.  Between the last read before
  // and the first read after, the GPU's power says what it used: the total stays exact.
  scripted_device d = stepped_gpu(0, 0.0, 0.0, 400.0);
  d.reset_at = 1.234;
  sampler_harness h({d});
  h.start();
  boundary_at(h, 0.5);
  h.run_until(2.0);
  const auto windows = h.finish_at();
  ASSERT_EQ(windows.size(), 1U);
  EXPECT_NEAR(window_j(windows[0], 0), truth_j(h.truth(), 0, windows[0]), 0.003);
  const device_timeline& tl = h.timeline(0);
  EXPECT_EQ(tl.counter_resets(), 1);
  EXPECT_EQ(tl.counter_wraps(), 0);
  // Estimated: from the last read (1.2 s) to the reset.
  EXPECT_NEAR(tl.reset_estimated_j(), 400.0 * 0.034, 0.003);
}

TEST(SamplerEnergy, ALostGpuKeepsItsEnergyUpToTheLossAndTheOthersCarryOn) {
  scripted_device lost = stepped_gpu(1, 0.1, 0.0775, 200.0);
  lost.lost_at = 1.55;  // the tick at 1.5 s is its last good reading
  sampler_harness h({stepped_gpu(0, 0.1, 0.0375), lost});
  h.start();
  boundary_at(h, 1.01);
  boundary_at(h, 2.01);
  h.run_until(3.0);
  const auto snap = h.sampler().snapshot();
  ASSERT_TRUE(snap);
  EXPECT_FALSE(snap->devices[0].lost);
  EXPECT_TRUE(snap->devices[1].lost);
  const auto windows = h.finish_at();
  ASSERT_EQ(windows.size(), 2U);
  for (const auto& w : windows) {
    EXPECT_NEAR(window_j(w, 0), truth_j(h.truth(), 0, w), edge_tolerance_j(300.0)) << w.index;
    EXPECT_FALSE(w.devices[0].lost);
    EXPECT_TRUE(w.devices[1].lost) << w.index;  // lost before the window ended
  }
  const auto& s = h.truth();
  EXPECT_NEAR(window_j(windows[0], 1), s.energy_j(1, 1.5) - s.energy_j(1, 1.01),
              edge_tolerance_j(200.0));
  EXPECT_EQ(windows[1].devices[1].energy_uj, 0);
  EXPECT_NEAR(s.read_times(0, 2.9).front(), 2.9, 1e-9);  // still read on the grid
}

TEST(SamplerEnergy, FailedReadsAndACounterThatStopsAnsweringCostNoEnergy) {
  // Reads fail from 1.0 to 1.35 s (four ticks); the counter answers NOT_SUPPORTED from 2.0 s on,
  // and power, integrated from the counter's last reading, takes over.
  scripted_device d = stepped_gpu(0, 0.1, 0.0375);
  d.errors = {{1.0, 1.35}};
  d.counter_unsupported_at = 2.0;
  sampler_harness h({d});
  h.start();
  boundary_at(h, 0.51);
  boundary_at(h, 1.51);
  boundary_at(h, 2.51);
  h.run_until(3.0);
  const auto windows = h.finish_at();
  ASSERT_EQ(windows.size(), 3U);
  for (const auto& w : windows)
    EXPECT_NEAR(window_j(w, 0), truth_j(h.truth(), 0, w), edge_tolerance_j(300.0)) << w.index;
  EXPECT_EQ(windows[0].devices[0].method, energy_method::counter);
  EXPECT_EQ(windows[1].devices[0].method, energy_method::polled);
  EXPECT_EQ(windows[2].devices[0].method, energy_method::polled);
  const device_timeline& tl = h.timeline(0);
  EXPECT_EQ(tl.read_errors(), 4);
  ASSERT_TRUE(tl.counter_lost_at());
  EXPECT_NEAR(*tl.counter_lost_at() - kOriginS, 1.9, 1e-9);
}

TEST(SamplerEnergy, AReadingIsStampedAtTheMiddleOfItsCall) {
  // Reads take 6 ms and the device answers halfway through.  A counter with a new value at
  // every read, 400 W, then 100 W from 1 s: each boundary is exact to the millijoule when a
  // reading is placed where it was taken, and 1.2 J and 0.3 J off when placed 3 ms early.
  scripted_device d = stepped_gpu(0, 0.0, 0.0, 400.0);
  d.power = {{0.0, 400.0}, {1.0, 100.0}};
  d.read_s = [](double) { return 0.006; };
  sampler_harness h({d});
  h.start();
  boundary_at(h, 0.5);
  boundary_at(h, 1.5);
  h.run_until(2.0);
  const auto windows = h.finish_at();
  ASSERT_EQ(windows.size(), 2U);
  for (const auto& w : windows)
    EXPECT_NEAR(window_j(w, 0), truth_j(h.truth(), 0, w), 0.003) << w.index;
}

TEST(SamplerEnergy, EnergyAtAPastInstantIsPlacedAsABoundaryWouldBeWithoutDenseReads) {
  // What token sources ask for (docs/inference.md): the energy at a scrape's instant, once the
  // sampler has read past it.  300 W, then 600 W from 5 s; a counter updated every 100.7 ms and
  // read every 100 ms.  Without the dense reads a boundary asks for, each counter update is
  // placed from the phase learnt at the start, a few milliseconds off by then: each end is
  // within the power over 2 ms away from a change of power.  An instant not yet read past, or older
  // than the history accounting keeps, is unknown, never a guess.
  scripted_device d = stepped_gpu(0, 0.1007, 0.0375);
  d.power = {{0.0, 300.0}, {5.0, 600.0}};
  sampler_harness h({d});
  h.start();
  h.run_until(8.0);
  const auto energy = [&](double t) {
    const auto e = h.sampler().energy_at(at(t));
    EXPECT_TRUE(e && e->size() == 1U) << t;
    return e && !e->empty() ? (*e)[0] : -1.0;
  };
  const auto truth = [&](double t0, double t1) {
    return h.truth().energy_j(0, t1) - h.truth().energy_j(0, t0);
  };
  EXPECT_NEAR(energy(6.47) - energy(3.03), truth(3.03, 6.47), 0.002 * (300 + 600));
  // Between two reads across the step, power readings spread the energy linearly: within the
  // step times half a read interval.
  EXPECT_NEAR(energy(5.03) - energy(4.96), truth(4.96, 5.03), (600 - 300) * 0.1 / 2);
  EXPECT_NEAR(energy(7.9) - energy(5.21), truth(5.21, 7.9), 0.002 * (600 + 600));
  EXPECT_FALSE(h.sampler().energy_at(at(8.5)));
  EXPECT_FALSE(h.sampler().energy_at(at(2.0)));
}

}  // namespace
}  // namespace joules::testing
