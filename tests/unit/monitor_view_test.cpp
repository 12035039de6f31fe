#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "backends/nvml/nvml_decode.hpp"
#include "health/findings.hpp"
#include "monitor/history.hpp"
#include "monitor/view.hpp"

namespace joules::monitor {
namespace {

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
  history h(60.0);
  for (int i = 0; i <= 200; ++i)
    h.add(i * 0.5, i < 100 ? 100.0 : 300.0);  // 100 s of readings, 300 W for the last 50 s
  EXPECT_EQ(h.peak(), 300.0);
  const auto b = h.buckets(100.0, 6);  // 10 s each, from t = 40 to 100
  ASSERT_EQ(b.size(), 6U);
  EXPECT_EQ(b[0], 100.0);
  EXPECT_EQ(b[5], 300.0);
  // Readings before the span are gone: the peak of a history that fell back is the new one.
  history g(10.0);
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

TEST(MonitorGlyphs, ReadingsFarApartLeaveNoGapsInAWideSparkline) {
  // One reading a second (--interval 1000) drawn in 100 columns of 0.6 s: every bucket after
  // the first reading shows the reading before it.
  history h(60.0, 2.0);
  for (int i = 0; i <= 60; ++i)
    h.add(1000.0 + i, i < 30 ? 300.0 : 600.0);
  const auto b = h.buckets(1060.0, 100);
  for (std::size_t k = 0; k < b.size(); ++k)
    ASSERT_TRUE(b[k].has_value()) << "column " << k;
  EXPECT_EQ(b[0], 300.0);
  EXPECT_EQ(b[99], 600.0);
  EXPECT_EQ(sparkline(b, 700.0).find(' '), std::string::npos);
  // Before the first reading, after an unknown power, and once readings stop for longer than
  // the hold (a hung driver): gaps.
  history g(60.0, 2.0);
  g.add(1030.0, 300.0);
  g.add(1031.0, 300.0);
  g.add(1032.0, std::nullopt);
  g.add(1040.0, 300.0);
  const auto c = g.buckets(1060.0, 60);  // one bucket a second, from t = 1000
  EXPECT_FALSE(c[29].has_value());
  EXPECT_EQ(c[30], 300.0);
  EXPECT_EQ(c[31], 300.0);
  EXPECT_FALSE(c[33].has_value());  // unknown from 1032
  EXPECT_EQ(c[40], 300.0);
  EXPECT_EQ(c[42], 300.0);  // held for 2 s
  EXPECT_FALSE(c[43].has_value());
  EXPECT_FALSE(c[59].has_value());
  EXPECT_EQ(g.peak(), 300.0);
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
  EXPECT_EQ(throttle_text(nvml::decode_clock_events(0x4 | 0x40)), "power cap, hw thermal");
  EXPECT_EQ(throttle_text(nvml::decode_clock_events(0)), "none");
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
  std::vector<history> histories = std::vector<history>(8);
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
      h.throttle = nvml::decode_clock_events(0x4);
      h.persistence_mode = i != 1;
      h.processes_known = true;
      d.now.health = h;
      for (int k = 0; k < 120; ++k)
        histories[i].add(940.0 + k * 0.5, 100.0 + 5.0 * k);
      d.power_history = &histories[i];
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
  EXPECT_NE(all.find("health   ok"), std::string::npos);
  EXPECT_NE(all.find("health   persistence off"), std::string::npos);  // GPU 1
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
  const auto tall = render_screen(m, 100, 90, false);
  const auto mid = render_screen(m, 100, 30, false);
  const auto low = render_screen(m, 100, 8, false);
  auto joined = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& l : v)
      s += l + "\n";
    return s;
  };
  EXPECT_NE(joined(tall).find("since start"), std::string::npos);  // full blocks
  EXPECT_EQ(joined(mid).find("since start"), std::string::npos);   // shorter ones
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
  const std::string a = plain_line("2026-01-01T00:00:00.000000Z", 0.04, m.gpus[0]);
  const std::string b = plain_line("2026-01-01T00:00:00.000000Z", 0.04, m.gpus[1]);
  EXPECT_EQ(a.back(), '\n');
  EXPECT_NE(a.find(" 350.0 "), std::string::npos) << a;
  EXPECT_NE(a.find("power_cap"), std::string::npos) << a;
  EXPECT_NE(a.find(" ok"), std::string::npos) << a;
  EXPECT_NE(b.find(" - "), std::string::npos) << b;
  // Columns line up with the header.
  EXPECT_EQ(header.find("pwr_w") + 5, a.find(" 350.0") + 6);
  EXPECT_EQ(header.find("age_s") + 5, a.find(" 0.0 ") + 4);
  EXPECT_EQ(plain_stale_line(m), "");
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

// A GPU with everything wrong at once: each flag and each throttle reason must be readable
// whole at 80 and 120 columns, at every level of detail.
device_view sick_gpu(device_view d) {
  health_reading& h = *d.now.health;
  h.ecc_uncorrected_volatile = 3;
  h.remap_failure = true;
  h.remap_pending = true;
  h.retirement_pending = true;
  h.throttle = nvml::decode_clock_events(0x4 | 0x8 | 0x20 | 0x40 | 0x80);
  h.pcie_generation = 3;
  h.pcie_width = 8;
  h.pcie_max_generation = 5;
  h.pcie_max_width = 16;
  h.pcie_tx_bytes_per_s = 1.5e9;
  h.pcie_rx_bytes_per_s = 2.5e9;
  h.nvlink_tx_bytes_per_s = 120e9;
  h.nvlink_rx_bytes_per_s = 110e9;
  h.temperature_c = 93;
  h.slowdown_temperature_c = 89;
  h.power_limit_w = 500;
  h.persistence_mode = false;
  d.now.health->gpu_util_percent = 90;
  return d;
}

std::vector<std::string> flags_of(const device_view& d) {
  std::vector<std::string> out;
  for (const auto& f : health::health_findings(d.info, *d.now.health, d.now.lost)) {
    if (f.level != health::severity::info) out.push_back(f.flag);
  }
  return out;
}

TEST(MonitorScreen, EveryFlagAndReasonIsReadableAt80And120Columns) {
  fixture f;
  auto m = f.model(2);
  m.gpus[1] = sick_gpu(m.gpus[1]);
  const auto flags = flags_of(m.gpus[1]);
  ASSERT_GE(flags.size(), 10U);
  const std::vector<std::string> reasons = {"power cap", "hw slowdown", "sw thermal", "hw thermal",
                                            "power brake"};
  for (std::size_t width : {80U, 120U}) {
    for (std::size_t height : {60U, 30U, 16U, 10U}) {
      const auto lines = render_screen(m, width, height, false);
      std::string all;
      for (const auto& l : lines) {
        EXPECT_LE(cells(l), width) << l;
        all += l + "\n";
      }
      for (const auto& flag : flags)
        EXPECT_NE(all.find(flag), std::string::npos)
            << width << "x" << height << " " << flag << "\n"
            << all;
      if (height >= 30) {  // the levels that show clock-event reasons and links
        for (const auto& r : reasons)
          EXPECT_NE(all.find(r), std::string::npos) << width << "x" << height << " " << r;
        EXPECT_NE(all.find("pcie gen3 x8 (max gen5 x16)"), std::string::npos) << all;
        EXPECT_NE(all.find("nvlink tx 120.0 GB/s rx 110.0 GB/s"), std::string::npos) << all;
      }
    }
  }
}

TEST(MonitorScreen, EightGpusUseTheHeightOf120x45) {
  fixture f;
  auto m = f.model(8);
  auto joined = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& l : v)
      s += l + "\n";
    return s;
  };
  // A process on each GPU: four-line blocks (clocks, throttle, health and a sparkline each)
  // and every process, in all but a line of the 45.
  for (unsigned g = 1; g < 8; ++g)
    m.processes.push_back({g, 5000 + g, "bob", "python eval.py", std::uint64_t{1} << 30U, false});
  auto lines = render_screen(m, 120, 45, false);
  std::string all = joined(lines);
  EXPECT_GE(lines.size(), 44U) << all;
  EXPECT_EQ(count(all, "clocks "), 8U) << all;
  EXPECT_EQ(count(all, "peak "), 8U) << all;
  EXPECT_EQ(count(all, "python "), 8U) << all;
  // One process: the lines left over give a full block to a GPU, the one with a problem first
  // (GPU 1: persistence off).
  m.processes.resize(1);
  lines = render_screen(m, 120, 45, false);
  all = joined(lines);
  EXPECT_GE(lines.size(), 40U) << all;
  EXPECT_EQ(count(all, "since start"), 1U) << all;
  EXPECT_LT(all.find("GPU 1  NVIDIA H100 80GB HBM3  GPU-00000001"), all.find("since start")) << all;
}

TEST(MonitorScreen, TheKeysAreListedOnlyWhenKeysAreRead) {
  fixture f;
  auto m = f.model(1);
  const auto with_keys = render_frame(m, ui_state{}, 120, 40, false);
  ASSERT_EQ(with_keys.size(), 40U);
  EXPECT_EQ(with_keys.back().rfind("q quit  ? help  v view: overview  s sort: index↑", 0), 0U)
      << with_keys.back();
  m.keys = false;
  for (const auto& l : render_frame(m, ui_state{}, 120, 40, false))
    EXPECT_EQ(l.find("q quit"), std::string::npos) << l;
}

TEST(MonitorStale, OldReadingsAreMarkedInEveryMode) {
  fixture f;
  auto m = f.model(2);
  m.readings_age_s = 8.4;
  m.stale = true;
  m.readings_clock = "12:03:57";
  const std::string banner = "readings 8 s old (from 12:03:57): the driver is not answering";
  EXPECT_EQ(stale_text(m), banner);
  const auto lines = render_screen(m, 120, 40, false);
  EXPECT_EQ(lines[1], banner);  // right under the title
  EXPECT_EQ(plain_stale_line(m), "# " + banner + "\n");
  EXPECT_NE(plain_line("t", m.readings_age_s, m.gpus[0]).find(" 8.4 "), std::string::npos);
  const auto j = nlohmann::json::parse(json_sample(m, "t"));
  EXPECT_EQ(j["readings_age_s"], 8.4);
  EXPECT_EQ(j["stale"], true);
  m.stale = false;
  EXPECT_EQ(stale_text(m), "");
  EXPECT_EQ(nlohmann::json::parse(json_sample(m, "t"))["stale"], false);
}

TEST(MonitorLost, ALostGpuIsSaidInEveryMode) {
  fixture f;
  auto m = f.model(2);
  m.gpus[1].now.lost = true;
  m.gpus[1].now.power_w.reset();
  m.gpus[1].now.health = health_reading{};
  std::string all;
  for (const auto& l : render_screen(m, 80, 40, false))
    all += l + "\n";
  EXPECT_NE(all.find("1 lost"), std::string::npos) << all;
  EXPECT_NE(all.find("LOST"), std::string::npos) << all;
  EXPECT_NE(plain_line("t", 0.0, m.gpus[1]).find("gpu_lost"), std::string::npos);
  const auto j = nlohmann::json::parse(json_sample(m, "t"));
  EXPECT_EQ(j["node"]["lost_gpus"], nlohmann::json::array({1}));
  EXPECT_EQ(j["devices"][1]["lost"], true);
  EXPECT_TRUE(j["devices"][1]["power_w"].is_null());
  EXPECT_EQ(j["devices"][1]["findings"][0]["code"], "gpu_lost");
}

TEST(MonitorJson, NumbersAreRoundedAndEveryHealthFieldIsThere) {
  fixture f;
  auto m = f.model(1);
  m.now_s = 1234.5678901234;
  m.elapsed_s = 83.123456;
  auto& d = m.gpus[0];
  d.now.power_w = 400.15700000000004;
  d.now.energy_j = 102399949.84834215;
  health_reading& h = *d.now.health;
  h.ecc_corrected_aggregate = 12;
  h.ecc_uncorrected_aggregate = 1;
  h.retired_pages_single_bit = 2;
  h.retired_pages_double_bit = 1;
  h.remapped_rows_corrected = 5;
  h.remapped_rows_uncorrected = 0;
  h.pcie_replays = 7;
  h.memory_reserved_bytes = std::uint64_t{512} << 20U;
  h.slowdown_temperature_c = 87.0;
  h.default_power_limit_w = 700.0;
  h.sm_activity_percent = 88.123456;
  h.pcie_tx_bytes_per_s = 1234567.891;
  const std::string line = json_sample(m, "t");
  EXPECT_NE(line.find("\"power_w\":400.157,"), std::string::npos) << line;
  EXPECT_NE(line.find("\"energy_j\":102399949.848,"), std::string::npos) << line;
  EXPECT_NE(line.find("\"monotonic_s\":1234.56789,"), std::string::npos) << line;
  EXPECT_NE(line.find("\"elapsed_s\":83.123,"), std::string::npos) << line;
  EXPECT_NE(line.find("\"sm_activity_percent\":88.1,"), std::string::npos) << line;
  EXPECT_NE(line.find("\"pcie_tx_bytes_per_s\":1234568,"), std::string::npos) << line;
  const auto j = nlohmann::json::parse(line)["devices"][0];
  EXPECT_EQ(j["ecc_corrected_aggregate"], 12);
  EXPECT_EQ(j["ecc_uncorrected_aggregate"], 1);
  EXPECT_EQ(j["retired_pages_single_bit"], 2);
  EXPECT_EQ(j["retired_pages_double_bit"], 1);
  EXPECT_EQ(j["remapped_rows_corrected"], 5);
  EXPECT_EQ(j["remapped_rows_uncorrected"], 0);
  EXPECT_EQ(j["pcie_replays"], 7);
  EXPECT_EQ(j["memory_reserved_bytes"], 512 << 20);
  EXPECT_EQ(j["slowdown_temperature_c"], 87.0);
  EXPECT_EQ(j["default_power_limit_w"], 700.0);
  EXPECT_TRUE(j["shutdown_temperature_c"].is_null());
}

}  // namespace
}  // namespace joules::monitor
