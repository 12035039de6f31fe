#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "monitor/power_history.hpp"
#include "monitor/view.hpp"

namespace joules::monitor {
namespace {

// Visible cells of a line (ANSI sequences take none; every glyph used is one cell).
std::size_t cells(const std::string& s) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0x1b) {
      while (i < s.size() && s[i] != 'm')
        ++i;
      continue;
    }
    if ((c & 0xC0) != 0x80) ++n;
  }
  return n;
}

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size()))
    ++n;
  return n;
}

TEST(MonitorGlyphs, BarsAreExactlyAsWideAsAsked) {
  std::string half;
  for (int i = 0; i < 4; ++i)
    half += "█";
  for (int i = 0; i < 4; ++i)
    half += "░";
  EXPECT_EQ(bar(0.5, 8), half);
  for (double f : {0.0, 0.01, 0.33, 0.999, 1.0, 1.7, -0.2}) {
    EXPECT_EQ(cells(bar(f, 17)), 17U) << f;
  }
  EXPECT_EQ(count(bar(1.0, 10), "█"), 10U);
  EXPECT_EQ(count(bar(0.0, 10), "░"), 10U);
  EXPECT_NE(bar(0.55, 10).find("▌"), std::string::npos);  // 5.5 cells: five and a half
}

TEST(MonitorGlyphs, SparklineScalesToFullAndLeavesGaps) {
  const std::vector<std::optional<double>> v = {0.0, 350.0, 700.0, std::nullopt, 900.0};
  EXPECT_EQ(sparkline(v, 700.0), "▁▅█ █");
  EXPECT_EQ(sparkline({}, 700.0), "");
}

TEST(MonitorGlyphs, HistoryKeepsTheLastMinuteInBuckets) {
  power_history h(60.0);
  for (int i = 0; i <= 200; ++i)
    h.add(i * 0.5, i < 100 ? 100.0 : 300.0);  // 100 s of readings, 300 W for the last 50 s
  EXPECT_EQ(h.peak(), 300.0);
  const auto b = h.buckets(100.0, 6);  // 10 s each, from t = 40 to 100
  ASSERT_EQ(b.size(), 6U);
  EXPECT_EQ(b[0], 100.0);
  EXPECT_EQ(b[5], 300.0);
  // Readings before the span are gone: the peak of a history that fell back is the new one.
  power_history g(10.0);
  g.add(0.0, 500.0);
  g.add(20.0, 100.0);
  EXPECT_EQ(g.peak(), 100.0);
  // No reading in a bucket: a gap, not a zero.
  const auto gaps = g.buckets(20.0, 5);
  EXPECT_FALSE(gaps[0].has_value());
  EXPECT_EQ(gaps[4], 100.0);
  g.add(21.0, std::nullopt);
  EXPECT_EQ(g.peak(), 100.0);
}

TEST(MonitorFormat, NumbersForPeople) {
  EXPECT_EQ(watts_text(512.4), "512 W");
  EXPECT_EQ(watts_text(7.25), "7.2 W");
  EXPECT_EQ(watts_text(std::nullopt), "-");
  EXPECT_EQ(energy_text(412.34), "412.3 J");
  EXPECT_EQ(energy_text(12345.0), "12.35 kJ");
  EXPECT_EQ(energy_text(3.2e6), "3.20 MJ");
  EXPECT_EQ(bytes_text(std::uint64_t{64} << 30U), "64.0 GiB");
  EXPECT_EQ(rate_text(1.5e9), "1.5 GB/s");
  EXPECT_EQ(duration_text(3725), "1h02m");
  EXPECT_EQ(duration_text(185), "3m05s");
  EXPECT_EQ(throttle_text(clock_events::decode(0x4 | 0x40)), "power cap, hw thermal");
  EXPECT_EQ(throttle_text(clock_events::decode(0)), "none");
  EXPECT_EQ(throttle_text(std::nullopt), "-");
}

TEST(MonitorFormat, FitCutsVisibleCellsAndClosesColour) {
  EXPECT_EQ(fit("abcdef", 4), "abcd");
  EXPECT_EQ(fit("ab", 4), "ab");
  EXPECT_EQ(fit("██████", 3), "███");
  EXPECT_EQ(fit("\x1b[31mredtext\x1b[0m", 3), "\x1b[31mred\x1b[0m");
  EXPECT_EQ(cells(fit("\x1b[1mGPU 0\x1b[0m  name", 8)), 8U);
}

struct fixture {
  std::vector<power_history> histories = std::vector<power_history>(8);
  screen_model model(std::size_t gpus) {
    screen_model m;
    m.host = "node7";
    m.source = "nvml, driver 570.86.15";
    m.clock = "12:04:05";
    m.now_s = 1000.0;
    m.interval_s = 0.5;
    m.elapsed_s = 83;
    for (std::size_t i = 0; i < gpus; ++i) {
      device_view d;
      d.info.index = static_cast<unsigned>(i);
      d.info.name = "NVIDIA H100 80GB HBM3";
      d.info.uuid = "GPU-0000000" + std::to_string(i);
      d.info.has_energy_counter = true;
      d.info.power = power_source::field_instant;
      d.info.power_limit = watts{700};
      d.now.power_w = 350.0;
      d.now.energy_j = 12345.0;
      health_reading h;
      h.gpu_util_percent = 97;
      h.sm_activity_percent = 88.0;
      h.tensor_activity_percent = 61.0;
      h.temperature_c = 61;
      h.sm_clock_mhz = 1980;
      h.max_sm_clock_mhz = 1980;
      h.power_limit_w = 700;
      h.default_power_limit_w = 700;
      h.throttle = clock_events::decode(0x4);
      h.persistence_mode = i != 1;
      h.processes_known = true;
      d.now.health = h;
      for (int k = 0; k < 120; ++k)
        histories[i].add(940.0 + k * 0.5, 100.0 + 5.0 * k);
      d.history = &histories[i];
      m.gpus.push_back(d);
    }
    m.processes_known = true;
    m.processes.push_back({0, 4242, "alice", "python train.py", std::uint64_t{12} << 30U, false});
    return m;
  }
};

TEST(MonitorScreen, FullBlocksWhenTheyFit) {
  fixture f;
  const auto lines = render_screen(f.model(2), 120, 40, /*color=*/false);
  ASSERT_LE(lines.size(), 40U);
  std::string all;
  for (const auto& l : lines) {
    EXPECT_LE(cells(l), 120U) << l;
    all += l + "\n";
  }
  EXPECT_NE(all.find("node  700 W now"), std::string::npos) << all;
  EXPECT_NE(all.find("24.69 kJ"), std::string::npos) << all;  // node energy: two GPUs
  EXPECT_NE(all.find("350 W / 700 W"), std::string::npos);
  EXPECT_NE(all.find("sm 88%"), std::string::npos);
  EXPECT_NE(all.find("tensor 61%"), std::string::npos);
  EXPECT_NE(all.find("throttle power cap"), std::string::npos);
  EXPECT_NE(all.find("health ok"), std::string::npos);
  EXPECT_NE(all.find("health persistence off"), std::string::npos);  // GPU 1
  EXPECT_NE(all.find("1980/1980 MHz"), std::string::npos);
  EXPECT_NE(all.find("4242  alice"), std::string::npos);
  EXPECT_NE(all.find("python train.py"), std::string::npos);
  EXPECT_NE(all.find("peak 695 W"), std::string::npos);
  // Half the limit: 20 of the 40 cells of the bar at 120 columns.
  EXPECT_NE(lines[3].find("GPU 0"), std::string::npos);
  EXPECT_EQ(count(lines[4], "█"), 20U) << lines[4];
}

TEST(MonitorScreen, ShorterTerminalsGetShorterBlocks) {
  fixture f;
  const auto m = f.model(8);
  const auto tall = render_screen(m, 100, 80, false);
  const auto mid = render_screen(m, 100, 30, false);
  const auto low = render_screen(m, 100, 8, false);
  auto joined = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& l : v)
      s += l + "\n";
    return s;
  };
  EXPECT_NE(joined(tall).find("clocks sm"), std::string::npos);
  EXPECT_EQ(joined(mid).find("clocks sm"), std::string::npos);
  EXPECT_NE(joined(mid).find("GPU 7"), std::string::npos);
  EXPECT_LE(mid.size(), 30U);
  EXPECT_LE(low.size(), 8U);
  EXPECT_NE(joined(low).find("more GPUs"), std::string::npos);
  for (const auto* v : {&tall, &mid, &low}) {
    for (const auto& l : *v)
      EXPECT_LE(cells(l), 100U) << l;
  }
}

TEST(MonitorScreen, ColourOnlyWhenAsked) {
  fixture f;
  for (const auto& l : render_screen(f.model(1), 100, 30, false))
    EXPECT_EQ(l.find('\x1b'), std::string::npos) << l;
  std::string all;
  for (const auto& l : render_screen(f.model(1), 100, 30, true))
    all += l;
  EXPECT_NE(all.find("\x1b[1m"), std::string::npos);
}

TEST(MonitorScreen, CpuAndDramRowsOnlyWhenMeasured) {
  fixture f;
  auto m = f.model(1);
  std::string all;
  for (const auto& l : render_screen(m, 100, 30, false))
    all += l + "\n";
  EXPECT_EQ(all.find("cpu "), std::string::npos);
  device_view cpu;
  cpu.info.kind = device_kind::cpu;
  cpu.info.name = "package-0";
  cpu.info.has_energy_counter = true;
  cpu.now.power_w = 85.0;
  cpu.now.energy_j = 1000.0;
  m.host_devices.push_back(cpu);
  all.clear();
  for (const auto& l : render_screen(m, 100, 30, false))
    all += l + "\n";
  EXPECT_NE(all.find("cpu    package-0  85 W now"), std::string::npos) << all;
  EXPECT_NE(all.find("435 W now"), std::string::npos) << all;  // node: GPU + CPU
}

TEST(MonitorPlain, OneLinePerDeviceWithDashesForUnknown) {
  fixture f;
  auto m = f.model(2);
  m.gpus[1].now.health.reset();
  const std::string header = plain_header();
  EXPECT_EQ(header[0], '#');
  const std::string a = plain_line("2026-01-01T00:00:00.000000Z", m.gpus[0]);
  const std::string b = plain_line("2026-01-01T00:00:00.000000Z", m.gpus[1]);
  EXPECT_EQ(a.back(), '\n');
  EXPECT_NE(a.find(" 350.0 "), std::string::npos) << a;
  EXPECT_NE(a.find("power_cap"), std::string::npos) << a;
  EXPECT_NE(a.find(" ok"), std::string::npos) << a;
  EXPECT_NE(b.find(" - "), std::string::npos) << b;
  // Columns line up with the header.
  EXPECT_EQ(header.find("pwr_w") + 5, a.find(" 350.0") + 6);
}

TEST(MonitorJson, SamplesParseWithNullsForUnknown) {
  fixture f;
  auto m = f.model(2);
  m.gpus[1].now.health.reset();
  const std::string line = json_sample(m, "2026-01-01T00:00:00.000000Z");
  ASSERT_EQ(line.back(), '\n');
  ASSERT_EQ(line.find('\n'), line.size() - 1);
  const auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["type"], "monitor_sample");
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["node"]["power_w"], 700.0);
  ASSERT_EQ(j["devices"].size(), 2U);
  EXPECT_EQ(j["devices"][0]["clock_events"], nlohmann::json::array({"power_cap"}));
  EXPECT_EQ(j["devices"][0]["processes"][0]["pid"], 4242);
  EXPECT_EQ(j["devices"][0]["processes"][0]["user"], "alice");
  EXPECT_TRUE(j["devices"][1]["temperature_c"].is_null());
  EXPECT_TRUE(j["devices"][1]["processes"].is_null());
  EXPECT_EQ(j["devices"][0]["method"], "counter");
}

}  // namespace
}  // namespace joules::monitor
