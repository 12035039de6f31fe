#include "energy/accounting.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace joules {
namespace {

device_info counter_device() {
  device_info d;
  d.has_energy_counter = true;
  d.power = power_source::field_instant;
  return d;
}

device_info polled_device() {
  device_info d;
  d.power = power_source::power_usage;
  return d;
}

double power_at(std::size_t device, double t) {
  return 200.0 + 100.0 * static_cast<double>(device) + 50.0 * std::sin(t);
}
double energy_at(std::size_t device, double t) {
  return (200.0 + 100.0 * static_cast<double>(device)) * t + 50.0 * (1.0 - std::cos(t));
}

// One sampler tick at t: every device read at t.
void tick(accounting& acc, double t) {
  tick_sample s;
  s.t = t;
  for (std::size_t d = 0; d < acc.device_count(); ++d) {
    device_reading r;
    r.energy_mj = static_cast<std::uint64_t>(std::floor(energy_at(d, t) * 1000.0));
    r.power = watts{power_at(d, t)};
    acc.timeline(d).add(t, r);
    s.power_w.push_back(power_at(d, t));
  }
  acc.add_tick(std::move(s));
  acc.resolve(false);
}

TEST(Accounting, WithNoWindowOpenMemoryStaysBoundedAndEnergyCumulative) {
  // `monitor` and `serve` sample for days without a boundary: old readings must go, and the
  // energy since the first reading must survive their going.
  accounting acc({counter_device(), polled_device()});
  for (double t = 0.0; t < 600.0; t += 0.1)
    tick(acc, t);
  EXPECT_LT(acc.timeline(0).counter().anchor_count(), 400U);  // 30 s of 10 reads/s, not 6000
  for (std::size_t d = 0; d < 2; ++d) {
    const auto& tl = acc.timeline(d);
    const auto e = tl.energy_at(tl.last_good_t(), /*final=*/true);
    ASSERT_TRUE(e.has_value());
    const double truth = energy_at(d, tl.last_good_t()) - energy_at(d, 0.0);
    EXPECT_NEAR(*e, truth, 0.01 * truth) << d;
  }
  // A boundary placed afterwards still resolves from the readings kept.
  acc.push_boundary(599.0);
  tick(acc, 600.0);
  tick(acc, 600.1);
  acc.push_boundary(600.05);
  tick(acc, 600.2);
  const auto w = acc.take_finished();
  ASSERT_EQ(w.size(), 1U);
  EXPECT_NEAR(static_cast<double>(w[0].devices[0].energy_uj.value()) * 1e-6,
              energy_at(0, 600.05) - energy_at(0, 599.0), 1.0);
}

TEST(Accounting, ReadingsAreKeptFromWhereAnInstantStillWaits) {
  // The library's instants are placed outside accounting (session/api_monitor.hpp): while one
  // waits, the readings around it must stay, however long ago it was.
  accounting kept({polled_device()});
  accounting trimmed({polled_device()});
  kept.keep_readings_from(5.0);
  for (double t = 0.0; t < 60.0; t += 0.1) {
    tick(kept, t);
    tick(trimmed, t);
  }
  const double truth = energy_at(0, 5.05) - energy_at(0, 0.0);
  // Without it, the readings of 5 s are gone: only an extrapolation from 50 s is left.
  EXPECT_GT(std::abs(trimmed.timeline(0).energy_at(5.05, false).value_or(0.0) - truth), 100.0);
  const auto e = kept.timeline(0).energy_at(5.05, false);
  ASSERT_TRUE(e);
  EXPECT_NEAR(*e, truth, 0.1);
  // Let go, the readings go too.
  kept.keep_readings_from(std::nullopt);
  tick(kept, 60.0);
  EXPECT_GT(std::abs(kept.timeline(0).energy_at(5.05, false).value_or(0.0) - truth), 100.0);
}

TEST(Accounting, WindowsAddUpToTheTotalExactly) {
  accounting acc({counter_device(), polled_device(), counter_device()});
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> gap(0.001, 0.3);
  double next_boundary = 1.0 + gap(rng);
  acc.push_boundary(1.0);
  std::vector<window_result> windows;
  for (double t = 0.95; t < 60.0; t += 0.1) {
    while (next_boundary < t) {
      acc.push_boundary(next_boundary);
      next_boundary += gap(rng);
    }
    tick(acc, t);
    for (auto& w : acc.take_finished())
      windows.push_back(std::move(w));
  }
  acc.push_boundary(60.0);
  tick(acc, 60.05);
  acc.resolve(true);
  for (auto& w : acc.take_finished())
    windows.push_back(std::move(w));
  ASSERT_GT(windows.size(), 200U);

  microjoules sum = 0;
  std::vector<microjoules> per_device(3, 0);
  for (std::size_t i = 0; i < windows.size(); ++i) {
    EXPECT_EQ(windows[i].index, i);
    if (i > 0) {
      EXPECT_EQ(windows[i].start_t, windows[i - 1].end_t);
    }
    sum += windows[i].energy_uj;
    for (std::size_t d = 0; d < 3; ++d)
      per_device[d] += *windows[i].devices[d].energy_uj;
  }
  // Conservation: the sum of the windows is the whole, to the microjoule.
  microjoules device_sum = 0;
  for (auto v : per_device)
    device_sum += v;
  EXPECT_EQ(sum, device_sum);
  // And the whole is right: counters exact to a millijoule; polled power to the trapezoid rule.
  const double truth0 = energy_at(0, 60.0) - energy_at(0, 1.0);
  const double truth1 = energy_at(1, 60.0) - energy_at(1, 1.0);
  EXPECT_NEAR(static_cast<double>(per_device[0]) * 1e-6, truth0, 0.01);
  EXPECT_NEAR(static_cast<double>(per_device[1]) * 1e-6, truth1, truth1 * 1e-4);
  EXPECT_EQ(windows.front().devices[0].method, energy_method::counter);
  EXPECT_EQ(windows.front().devices[1].method, energy_method::polled);
}

TEST(Accounting, PeakIsThePeakOfPerTickSums) {
  accounting acc({polled_device(), polled_device()});
  acc.push_boundary(0.0);
  const std::vector<std::pair<double, double>> powers = {
      {100, 400}, {300, 300}, {350, 100}, {200, 200}};
  double t = -0.05;
  for (const auto& [a, b] : powers) {
    for (std::size_t d = 0; d < 2; ++d) {
      device_reading r;
      r.power = watts{d == 0 ? a : b};
      acc.timeline(d).add(t, r);
    }
    acc.add_tick({t, {a, b}});
    t += 0.1;
  }
  acc.push_boundary(0.3);
  acc.resolve(true);
  const auto w = acc.take_finished();
  ASSERT_EQ(w.size(), 1U);
  EXPECT_EQ(*w[0].peak_power_w, 600.0);  // 300 + 300, not 350 + 400
  EXPECT_EQ(*w[0].devices[0].peak_power_w, 350.0);
  EXPECT_EQ(*w[0].devices[1].peak_power_w, 300.0);
}

TEST(Accounting, ALostDeviceKeepsTheEnergyKnownUntilItWasLost) {
  accounting acc({counter_device(), counter_device()});
  acc.push_boundary(1.0);
  for (double t = 0.95; t < 3.0; t += 0.1)
    tick(acc, t);
  device_reading lost;
  lost.status = read_status::lost;
  acc.timeline(1).add(3.05, lost);
  for (double t = 3.05; t < 6.0; t += 0.1) {
    device_reading r;
    r.energy_mj = static_cast<std::uint64_t>(std::floor(energy_at(0, t) * 1000.0));
    r.power = watts{power_at(0, t)};
    acc.timeline(0).add(t, r);
    acc.add_tick({t, {power_at(0, t), std::nullopt}});
    acc.resolve(false);
  }
  acc.push_boundary(5.9);
  acc.resolve(true);
  const auto w = acc.take_finished();
  ASSERT_EQ(w.size(), 1U);
  EXPECT_TRUE(w[0].devices[1].lost);
  EXPECT_FALSE(w[0].devices[0].lost);
  const double known1 = energy_at(1, 2.95) - energy_at(1, 1.0);
  EXPECT_NEAR(static_cast<double>(*w[0].devices[1].energy_uj) * 1e-6, known1, 0.05);
}

TEST(Accounting, ADeviceThatNeverAnsweredIsUnknownNotZero) {
  accounting acc({counter_device(), counter_device()});
  acc.push_boundary(1.0);
  for (double t = 0.95; t < 2.0; t += 0.1) {
    device_reading r;
    r.energy_mj = static_cast<std::uint64_t>(t * 1e5);
    acc.timeline(0).add(t, r);
    device_reading err;
    err.status = read_status::error;
    acc.timeline(1).add(t, err);
    acc.add_tick({t, {std::nullopt, std::nullopt}});
  }
  acc.push_boundary(1.9);
  acc.resolve(true);
  const auto w = acc.take_finished();
  ASSERT_EQ(w.size(), 1U);
  EXPECT_TRUE(w[0].devices[0].energy_uj.has_value());
  EXPECT_FALSE(w[0].devices[1].energy_uj.has_value());
  EXPECT_EQ(w[0].devices[1].method, energy_method::none);
}

TEST(Accounting, MemoryStaysBoundedOverLongRunsWithManyWindows) {
  accounting acc({counter_device(), polled_device()});
  acc.push_boundary(0.0);
  double b = 0.0;
  std::size_t windows = 0;
  for (int i = 0; i < 20000; ++i) {
    const double t = 0.05 + 0.1 * i;
    while (b + 0.03 < t) {
      b += 0.03;
      acc.push_boundary(b);
    }
    tick(acc, t);
    windows += acc.take_finished().size();
    EXPECT_LE(acc.pending_boundaries(), 10U);
  }
  EXPECT_GT(windows, 60000U);
  EXPECT_LE(acc.timeline(0).counter().anchor_count(), 5U);
}

TEST(Accounting, ALongRunWithOneOpenWindowHoldsBoundedMemory) {
  // `run`: the start boundary opens the only window, which stays open for hours.  Its energy is
  // known as soon as the readings around it are in; what comes after must not pile up.
  accounting acc({counter_device(), polled_device()});
  tick(acc, 0.0);
  acc.push_boundary(0.05);
  for (int i = 1; i < 36000; ++i)  // an hour of readings every 100 ms
    tick(acc, 0.1 * i);
  EXPECT_LE(acc.timeline(0).counter().anchor_count(), 110U);  // ~10 s of readings
  acc.push_boundary(3599.95);
  tick(acc, 3600.0);
  acc.resolve(/*final=*/true);
  const auto w = acc.take_finished();
  ASSERT_EQ(w.size(), 1U);
  for (std::size_t d = 0; d < 2; ++d) {
    const double truth = energy_at(d, 3599.95) - energy_at(d, 0.05);
    EXPECT_NEAR(static_cast<double>(*w[0].devices[d].energy_uj) / 1e6, truth, 1e-3 * truth) << d;
  }
}

TEST(Accounting, PeakIsAReadingNeverTheWindowsAverage) {
  // A short window: its power reading (100 W) misses what the counter says was used (300 W on
  // average); the peak stays the highest reading, a value the device reported.
  accounting acc({counter_device()});
  for (int i = 0; i <= 3; ++i) {
    tick_sample s;
    s.t = 0.1 * i;
    device_reading r;
    r.energy_mj = static_cast<std::uint64_t>(30000 * i);  // 300 W
    r.power = watts{100.0};
    acc.timeline(0).add(s.t, r);
    s.power_w.push_back(100.0);
    acc.add_tick(std::move(s));
    if (i == 0) acc.push_boundary(0.09);
    if (i == 1) acc.push_boundary(0.13);
  }
  acc.resolve(/*final=*/true);
  const auto w = acc.take_finished();
  ASSERT_EQ(w.size(), 1U);
  const double avg = static_cast<double>(w[0].energy_uj) / 1e6 / w[0].duration_s();
  EXPECT_NEAR(avg, 300.0, 1.0);
  ASSERT_TRUE(w[0].peak_power_w && w[0].devices[0].peak_power_w);
  EXPECT_EQ(*w[0].peak_power_w, 100.0);
  EXPECT_EQ(*w[0].devices[0].peak_power_w, 100.0);
}

}  // namespace
}  // namespace joules
