// monitor's views behind its keys (one GPU in detail, the graphs, the processes, the help, the
// pause), the minutes of history they draw, the shares of energy per process, and that no
// outside string reaches the terminal as a control in any of them.
#include <gtest/gtest.h>

#include "backends/nvml/nvml_decode.hpp"
#include "monitor/history.hpp"
#include "monitor/live.hpp"
#include "monitor/view.hpp"

namespace joules::monitor {
namespace {

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& l : v)
    s += l + "\n";
  return s;
}

TEST(MonitorHistory, FiveMinutesInBoundedMemoryWhateverTheInterval) {
  history h(kHistorySpanS, 0.1);
  // 400 s of readings every 10 ms (--interval 10): 300 W, then 600 W for the last 100 s.
  for (int i = 0; i <= 40000; ++i)
    h.add(i * 0.01, i < 30000 ? 300.0 : 600.0);
  EXPECT_LE(h.entries(), history::kMaxEntries + 1);
  const auto b = h.buckets(400.0, 3);  // 100 s each, from t = 100
  EXPECT_DOUBLE_EQ(*b[0], 300.0);
  EXPECT_NEAR(*b[1], 300.0, 0.1);  // but for the one entry of 100 ms that holds 600 W too
  EXPECT_DOUBLE_EQ(*b[2], 600.0);
  EXPECT_EQ(h.peak(), 600.0);
  EXPECT_EQ(h.peak(299.0, 60.0), 300.0);  // the peak of a minute that had no 600 W
  // The last minute only, as the overview's sparkline asks.
  const auto last = h.buckets(400.0, 2, kSparkSpanS);
  EXPECT_DOUBLE_EQ(*last[0], 600.0);
  // A short spike among merged readings keeps its height in the peak.
  history g(kHistorySpanS, 0.1);
  for (int i = 0; i < 100; ++i)
    g.add(i * 0.01, i == 55 ? 900.0 : 100.0);
  EXPECT_EQ(g.peak(), 900.0);
  EXPECT_LT(g.entries(), 100U);
}

TEST(MonitorHistory, BrailleAreaGraphs) {
  // One cell, two columns: 0 (its bottom dot) and full (four dots).
  EXPECT_EQ(braille_area({0.0, 100.0}, 100.0, 1), std::vector<std::string>{"⣸"});
  // Two rows: half height fills the bottom row only; unknown is blank.
  EXPECT_EQ(braille_area({std::nullopt, 50.0}, 100.0, 2), (std::vector<std::string>{" ", "⢸"}));
  const auto full = braille_area({100.0, 100.0, 100.0}, 100.0, 2);  // an odd count: 2 cells
  EXPECT_EQ(full, (std::vector<std::string>{"⣿⡇", "⣿⡇"}));
  EXPECT_EQ(braille_area({}, 100.0, 3), (std::vector<std::string>{"", "", ""}));
}

TEST(MonitorShares, InProportionToSmUtilisationElseEqual) {
  auto proc = [](unsigned pid, std::optional<double> sm) {
    gpu_process p;
    p.pid = pid;
    p.sm_util_percent = sm;
    return p;
  };
  auto s = energy_shares({proc(1, 30.0), proc(2, 10.0)}, true);
  EXPECT_DOUBLE_EQ(*s[0], 0.75);
  EXPECT_DOUBLE_EQ(*s[1], 0.25);
  s = energy_shares({proc(1, 0.0), proc(2, 0.0)}, true);  // idle: they hold the GPU together
  EXPECT_DOUBLE_EQ(*s[0], 0.5);
  // A pid with a compute and a graphics context is one process.
  s = energy_shares({proc(1, 60.0), proc(2, 20.0), proc(1, 60.0)}, true);
  EXPECT_DOUBLE_EQ(*s[0], 0.75);
  EXPECT_DOUBLE_EQ(*s[2], 0.75);
  EXPECT_DOUBLE_EQ(*s[1], 0.25);
  s = energy_shares({proc(1, std::nullopt)}, false);
  EXPECT_FALSE(s[0]);
}

struct frames_fixture {
  std::vector<history> power = std::vector<history>(4, history(kHistorySpanS));
  std::vector<history> util = std::vector<history>(4, history(kHistorySpanS));

  screen_model model(std::size_t gpus) {
    screen_model m;
    m.host = "node7";
    m.source = "nvml, driver 570.86.15";
    m.clock = "12:04:05";
    m.now_s = 1000.0;
    m.interval_s = 0.5;
    m.elapsed_s = 300;
    for (std::size_t i = 0; i < gpus; ++i) {
      device_view d;
      d.info.index = static_cast<unsigned>(i);
      d.info.name = "NVIDIA H100 80GB HBM3";
      d.info.uuid = "GPU-0000000" + std::to_string(i);
      d.info.has_energy_counter = true;
      d.info.power = power_source::field_instant;
      d.info.power_limit = watts{700};
      d.now.power_w = 100.0 + 200.0 * static_cast<double>(i);  // GPU 3 draws the most
      d.now.energy_j = 12345.0;
      health_reading h;
      h.gpu_util_percent = static_cast<unsigned>(90 - 20 * i);
      h.temperature_c = 50.0 + static_cast<double>((i * 7) % 4);
      h.memory_used_bytes = std::uint64_t{1} << (30U + i);
      h.memory_total_bytes = std::uint64_t{80} << 30U;
      h.power_limit_w = 700;
      h.throttle = nvml::decode_clock_events(0);
      h.persistence_mode = true;
      h.processes_known = true;
      h.process_utilization_known = i != 1;
      d.now.health = h;
      for (int k = 0; k < 600; ++k) {
        power[i].add(700.0 + k * 0.5, 100.0 + static_cast<double>(k % 100) * 5.0);
        util[i].add(700.0 + k * 0.5, static_cast<double>(k % 100));
      }
      d.power_history = &power[i];
      d.util_history = &util[i];
      m.gpus.push_back(d);
    }
    m.processes_known = true;
    process_row a{0, 4242, "alice", "python train.py", std::uint64_t{12} << 30U, false};
    a.sm_util_percent = 60.0;
    a.share = 0.75;
    a.power_w = 75.0;
    a.energy_j = 9000.0;
    process_row b{0, 4243, "bob", "python eval.py", std::uint64_t{2} << 30U, false};
    b.sm_util_percent = 20.0;
    b.share = 0.25;
    b.power_w = 25.0;
    b.energy_j = 3000.0;
    process_row c{1, 5000, "carol", "python serve.py", std::uint64_t{4} << 30U, false};
    m.processes = {a, b, c};
    return m;
  }
};

TEST(MonitorFrames, SortOrdersTheOverviewAndReverseFlipsIt) {
  frames_fixture f;
  const auto m = f.model(4);
  ui_state ui;
  EXPECT_EQ(gpu_order(m, ui), (std::vector<std::size_t>{0, 1, 2, 3}));
  ui.sort = sort_key::power;
  EXPECT_EQ(gpu_order(m, ui), (std::vector<std::size_t>{3, 2, 1, 0}));
  ui.reverse = true;
  EXPECT_EQ(gpu_order(m, ui), (std::vector<std::size_t>{0, 1, 2, 3}));
  ui = ui_state{};
  ui.sort = sort_key::memory;
  EXPECT_EQ(gpu_order(m, ui), (std::vector<std::size_t>{3, 2, 1, 0}));
  ui.sort = sort_key::temperature;  // 50, 53, 52, 51 °C
  EXPECT_EQ(gpu_order(m, ui), (std::vector<std::size_t>{1, 2, 3, 0}));
  ui.sort = sort_key::utilisation;
  EXPECT_EQ(gpu_order(m, ui), (std::vector<std::size_t>{0, 1, 2, 3}));
  ui.sort = sort_key::power;
  const std::string all = joined(render_frame(m, ui, 120, 60, false));
  EXPECT_LT(all.find("GPU 3 "), all.find("GPU 0 ")) << all;
  EXPECT_NE(all.find("s sort: power↓"), std::string::npos) << all;
}

TEST(MonitorFrames, OneGpuInDetailWithGraphsAxesAndItsProcesses) {
  frames_fixture f;
  const auto m = f.model(4);
  ui_state ui;
  ui.focus = 0;
  for (std::size_t width : {80U, 120U}) {
    const auto lines = render_frame(m, ui, width, 40, false);
    ASSERT_EQ(lines.size(), 40U);
    const std::string all = joined(lines);
    EXPECT_NE(all.find("GPU 0  NVIDIA H100 80GB HBM3"), std::string::npos) << all;
    EXPECT_EQ(all.find("GPU 1"), std::string::npos) << all;
    EXPECT_NE(all.find("power   now 100 W, peak 595 W, limit 700 W (last 5 min)"),
              std::string::npos)
        << all;
    EXPECT_NE(all.find("utilisation   now 90%"), std::string::npos) << all;
    EXPECT_NE(all.find(" 700 W ┤"), std::string::npos) << all;
    EXPECT_NE(all.find("   0 W ┤"), std::string::npos) << all;
    EXPECT_NE(all.find(" 100% ┤"), std::string::npos) << all;
    EXPECT_NE(all.find("└-5m"), std::string::npos) << all;
    EXPECT_NE(all.find("now\n"), std::string::npos) << all;
    EXPECT_NE(all.find("⣿"), std::string::npos) << all;
    EXPECT_NE(all.find("python train.py"), std::string::npos) << all;
    EXPECT_NE(all.find("75%"), std::string::npos) << all;
    EXPECT_EQ(all.find("python serve.py"), std::string::npos) << all;  // GPU 1's
    for (const auto& l : lines)
      EXPECT_LE(cells(l), width) << l;
  }
  // A GPU whose driver gives no per-process utilisation says so.
  ui.focus = 1;
  const std::string one = joined(render_frame(m, ui, 80, 40, false));
  EXPECT_NE(one.find("python serve.py"), std::string::npos) << one;
  EXPECT_NE(one.find("no per-process utilisation"), std::string::npos) << one;
}

TEST(MonitorFrames, TheDetailViewShowsVideoEnginesXidsAndNvlinks) {
  frames_fixture f;
  auto m = f.model(1);
  health_reading& h = *m.gpus[0].now.health;
  h.encoder_util_percent = 35;
  h.decoder_util_percent = 5;
  h.xid_known = true;
  h.xid_counts = {{13, 2}, {79, 1}};
  h.last_xid = 79;
  h.nvlink_links = {{0, true}, {1, true}, {2, false}, {3, true}};
  ui_state ui;
  ui.focus = 0;
  for (std::size_t width : {80U, 120U}) {
    const auto lines = render_frame(m, ui, width, 40, false);
    const std::string all = joined(lines);
    EXPECT_NE(all.find("enc 35%"), std::string::npos) << all;
    EXPECT_NE(all.find("dec 5%"), std::string::npos) << all;
    EXPECT_NE(all.find("last 79 (GPU has fallen off the bus)"), std::string::npos) << all;
    EXPECT_NE(all.find("3 XIDs since start"), std::string::npos) << all;
    EXPECT_NE(all.find("XID 79"), std::string::npos) << all;  // the health flag
    EXPECT_NE(all.find("nvlink 3/4 up"), std::string::npos) << all;
    EXPECT_NE(all.find("NVLink down 1"), std::string::npos) << all;
    for (const auto& l : lines)
      EXPECT_LE(cells(l), width) << l;
  }
}

TEST(MonitorFrames, ProcessesWithTheirSharesSortedAsAsked) {
  frames_fixture f;
  const auto m = f.model(4);
  ui_state ui;
  ui.view = view_kind::processes;
  auto all = joined(render_frame(m, ui, 100, 30, false));
  EXPECT_NE(all.find("    PID USER       GPU    MEMORY  SM%  SHARE  POWER     ENERGY  COMMAND"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("   4242 alice        0  12.0 GiB   60    75%   75 W    9.00 kJ  python "
                     "train.py"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("   5000 carol        1   4.0 GiB    -      -      -          -  python "
                     "serve.py"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("GPU 1: the driver reports no per-process utilisation"), std::string::npos)
      << all;
  EXPECT_LT(all.find("4242"), all.find("4243"));
  ui.sort = sort_key::memory;
  all = joined(render_frame(m, ui, 100, 30, false));
  EXPECT_LT(all.find("4242"), all.find("5000"));  // 12 GiB, 4 GiB, 2 GiB
  EXPECT_LT(all.find("5000"), all.find("4243"));
  ui.reverse = true;
  all = joined(render_frame(m, ui, 100, 30, false));
  EXPECT_LT(all.find("4243"), all.find("4242"));
}

TEST(MonitorFrames, GraphsOfEveryGpuAndTheHelpOverlayAndThePause) {
  frames_fixture f;
  const auto m = f.model(4);
  ui_state ui;
  ui.view = view_kind::graphs;
  auto lines = render_frame(m, ui, 120, 40, false);
  auto all = joined(lines);
  for (int g = 0; g < 4; ++g)
    EXPECT_NE(all.find("GPU " + std::to_string(g) + "  power   now"), std::string::npos) << all;
  EXPECT_NE(all.find("└-5m"), std::string::npos) << all;
  ui = ui_state{};
  ui.help = true;
  lines = render_frame(m, ui, 80, 24, false);
  ASSERT_EQ(lines.size(), 24U);
  all = joined(lines);
  for (const char* k : {"q, Ctrl-C", "Ctrl-Z", "pause the screen", "sort by index, power",
                        "reverse the sort", "previous or next GPU", "1 - 9", "Esc, 0", "next view"})
    EXPECT_NE(all.find(k), std::string::npos) << k << "\n" << all;
  for (const auto& l : lines)
    EXPECT_LE(cells(l), 80U) << l;
  ui = ui_state{};
  ui.paused = true;
  lines = render_frame(m, ui, 80, 24, false);
  EXPECT_NE(lines[0].find("paused"), std::string::npos) << lines[0];
  EXPECT_NE(lines.back().find("p resume"), std::string::npos) << lines.back();
}

TEST(MonitorFrames, OutsideStringsNeverReachTheTerminalAsControls) {
  frames_fixture f;
  auto m = f.model(2);
  m.host = "evil\x1b]0;host\x07";
  m.source = "nvml, driver 570\x1b[2J";
  m.gpus[0].info.name = "GPU\x1b]0;pwned\x07name";
  m.gpus[0].info.uuid = "GPU-\x1b[31mred";
  m.processes[0].user = "\x1b[2Juser";
  m.processes[0].command =
      "python\nx\x1b]0;pwned\x07 \xC2\x9B"
      "2J";
  std::vector<ui_state> uis(5);
  uis[1].view = view_kind::processes;
  uis[2].view = view_kind::graphs;
  uis[3].focus = 0;
  uis[4].help = true;
  for (const auto& ui : uis) {
    for (bool color : {false, true}) {
      const std::string all = joined(render_frame(m, ui, 120, 45, color));
      EXPECT_EQ(all.find("\x1b]"), std::string::npos) << all;
      EXPECT_EQ(all.find('\x07'), std::string::npos) << all;
      EXPECT_EQ(all.find("\x1b[2J"), std::string::npos) << all;
      EXPECT_EQ(all.find("\xC2\x9B"), std::string::npos) << all;
      if (!color) {
        EXPECT_EQ(all.find('\x1b'), std::string::npos) << all;
      }
    }
  }
  const std::string overview = joined(render_frame(m, ui_state{}, 120, 45, false));
  EXPECT_NE(overview.find("evil\\x1b]0;host\\x07"), std::string::npos) << overview;
  EXPECT_NE(overview.find("GPU\\x1b]0;pwned\\x07name"), std::string::npos) << overview;
  ui_state procs;
  procs.view = view_kind::processes;
  const std::string table = joined(render_frame(m, procs, 120, 45, false));
  EXPECT_NE(table.find("python\\nx\\x1b]0;pwned\\x07 \\x9b2J"), std::string::npos) << table;
  EXPECT_NE(table.find("\\x1b[2Ju"), std::string::npos) << table;
}

}  // namespace
}  // namespace joules::monitor
