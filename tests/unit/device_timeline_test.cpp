#include "energy/device_timeline.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace joules {
namespace {

// Power that changes every 20 ms and, read every 100 ms, aliases: five segments further on it is
// 5 W lower, so sparse readings show a slow drift while the GPU swings between 100 and 700 W.
double aliased_power(double t) {
  const auto i = static_cast<long>(std::floor(t / 0.02));
  return 100.0 + static_cast<double>((i * 119) % 600);
}
double aliased_energy(double t) {
  const auto n = static_cast<long>(std::floor(t / 0.02));
  double e = 0.0;
  for (long i = 0; i < n; ++i)
    e += 0.02 * (100.0 + static_cast<double>((i * 119) % 600));
  return e + (t - 0.02 * static_cast<double>(n)) * aliased_power(t);
}

// An H100-like counter: exact energy in mJ, advancing at 0.037 + k * 0.1 s.
std::uint64_t counter_mj(double t) {
  const double u = 0.037 + std::floor((t - 0.037) / 0.1) * 0.1;
  // Signed until the sum: before the first update (t < 0.037) the energy is negative.
  return static_cast<std::uint64_t>(
      1000000 + static_cast<std::int64_t>(std::floor(aliased_energy(u) * 1000.0)));
}

device_info h100() {
  device_info d;
  d.has_energy_counter = true;
  d.power = power_source::field_instant;
  return d;
}

void read(device_timeline& tl, double t) {
  device_reading r;
  r.energy_mj = counter_mj(t);
  r.power = watts{aliased_power(t)};
  tl.add(t, r);
}

TEST(DeviceTimeline, ABoundaryJustBeforeASparseReadIsPlacedFromTheDenseReadsAfterIt) {
  // The sampler reads every 2 ms at the start, every 100 ms after that, and every 1 ms after the
  // end until the counter advances.  The run ends 0.1 ms before a regular tick: the energy
  // between the counter update before the end and the end must come from the counter and the
  // dense readings after the end, not from the aliased sparse readings before it (which put
  // it 2.5 J off).  What is left is the dense readings straddling the power steps (2 ms each).
  device_timeline tl(h100());
  tl.begin_burst();
  double t = 0.0103;
  for (; t < 0.36; t += 0.002)
    read(tl, t);
  tl.end_burst();
  for (t = 0.4267; t < 2.9; t += 0.1)
    read(tl, t);
  const double end = t - 0.0001;
  for (double d = t; d < t + 0.2; d += 0.001)
    read(tl, d);
  const double start = 0.02;
  const auto e0 = tl.energy_at(start, true);
  const auto e1 = tl.energy_at(end, true);
  ASSERT_TRUE(e0 && e1);
  const double truth = aliased_energy(end) - aliased_energy(start);
  EXPECT_NEAR(*e1 - *e0, truth, 0.2) << "truth " << truth;
}

TEST(DeviceTimeline, WithoutACounterTheEnergyIsThePowerIntegral) {
  device_info d;
  d.power = power_source::field_instant;
  device_timeline tl(d);
  for (int i = 0; i <= 10; ++i) {
    const double t = 0.1 * i;
    device_reading r;
    r.power = watts{100.0 + 100.0 * t};
    tl.add(t, r);
  }
  const auto e = tl.energy_at(1.0, false);
  ASSERT_TRUE(e);
  EXPECT_NEAR(*e, 150.0, 1e-6);  // linear power: the trapezoid rule is exact
}

TEST(DeviceTimeline, AGpuWhoseReadingsAllStopKeepsItsEnergyFlat) {
  // NOT_SUPPORTED for counter and power mid-run: nothing may grow at the last power for ever.
  device_timeline tl(h100());
  for (int i = 0; i <= 10; ++i) {
    device_reading r;
    r.energy_mj = 1000U + static_cast<std::uint64_t>(i) * 40000U;  // 400 W, read every 100 ms
    r.power = watts{400.0};
    tl.add(0.1 * i, r);
  }
  for (int i = 11; i <= 50; ++i) {
    device_reading r;
    r.counter_unsupported = true;
    r.power_unsupported = true;
    tl.add(0.1 * i, r);
  }
  ASSERT_TRUE(tl.silent_at());
  EXPECT_NEAR(*tl.silent_at(), 1.1, 1e-9);
  EXPECT_NEAR(tl.last_good_t(), 1.0, 1e-9);
  const auto e = tl.energy_at(5.0, /*final=*/true);
  ASSERT_TRUE(e);
  EXPECT_NEAR(*e, 400.0, 1e-6);  // 1 s at 400 W, and nothing after
}

}  // namespace
}  // namespace joules
