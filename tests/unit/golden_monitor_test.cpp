// Golden files of `joules monitor`'s screens (tests/golden/monitor; `make golden` rewrites them):
// the overview at 80×24 and 120×40, one GPU in detail, the processes, the graphs, the help, a
// sorted and paused overview.  The model is built as live.cpp builds it, from the simulated
// backend read every 0.5 s for 4 minutes of virtual time, so that every number and every braille
// dot is the same on every machine.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include "backends/sim/sim_backend.hpp"
#include "golden.hpp"
#include "monitor/history.hpp"
#include "monitor/live.hpp"
#include "monitor/view.hpp"

namespace joules::monitor {
namespace {

constexpr double kIntervalS = 0.5;
constexpr double kWatchedS = 240.0;

struct simulated_node {
  std::vector<history> power;
  std::vector<history> util;
  screen_model model;
};

// Four simulated H100s training from the moment monitor opened them, watched for 4 minutes; a
// process on each, and an evaluation beside the training on GPU 0.
std::unique_ptr<simulated_node> watch() {
  auto node = std::make_unique<simulated_node>();
  mono_time now = mono_time(std::chrono::seconds(1000));
  sim_options o;
  o.gpus = 4;
  o.clock = [&now] { return now; };
  const auto b = open_sim_backend(o);
  const std::size_t n = b->devices().size();
  const double hold = kIntervalS + 1.0;  // as live_model: the interval plus kStaleSlack
  node->power.assign(n, history(kHistorySpanS, hold));
  node->util.assign(n, history(kHistorySpanS, hold));
  std::vector<std::uint64_t> first_mj(n);
  std::vector<sampler_snapshot::device> last(n);
  const auto step = std::chrono::milliseconds(500);
  for (int k = 0; k * kIntervalS <= kWatchedS; ++k, now += step) {
    for (std::size_t i = 0; i < n; ++i) {
      const device_reading r = b->read(i, read_what::all);
      if (k == 0) first_mj[i] = r.energy_mj.value_or(0);
      sampler_snapshot::device d;
      d.power_w = r.power->value;
      d.energy_j = static_cast<double>(*r.energy_mj - first_mj[i]) / 1000.0;
      d.counter_mj = r.energy_mj;
      d.health = b->read_health(i);
      node->power[i].add(monotonic_seconds(now), d.power_w);
      node->util[i].add(monotonic_seconds(now),
                        static_cast<double>(d.health->gpu_util_percent.value_or(0)));
      last[i] = d;
    }
  }
  now -= step;  // the last reading's instant
  screen_model& m = node->model;
  m.host = "node7";
  m.source = "sim (simulated)";
  m.clock = "18:04:05";
  m.now_s = monotonic_seconds(now);
  m.interval_s = kIntervalS;
  m.elapsed_s = kWatchedS;
  m.readings_age_s = 0.04;
  m.processes_known = true;
  for (std::size_t i = 0; i < n; ++i) {
    device_view v{b->devices()[i], last[i], &node->power[i], &node->util[i]};
    health_reading& h = *v.now.health;
    const auto index = static_cast<unsigned>(i);
    const double util = static_cast<double>(h.gpu_util_percent.value_or(0));
    gpu_process train;
    train.pid = 4100 + index;
    train.used_memory_bytes = std::uint64_t{52} << 30U;
    train.sm_util_percent = i == 0 ? util * 0.8 : util;
    h.processes = {train};
    if (i == 0) {
      gpu_process eval;
      eval.pid = 5230;
      eval.used_memory_bytes = std::uint64_t{4} << 30U;
      eval.sm_util_percent = util * 0.2;
      h.processes.push_back(eval);
    }
    h.processes_known = true;
    h.process_utilization_known = true;
    const auto shares = energy_shares(h.processes, true);
    for (std::size_t p = 0; p < h.processes.size(); ++p) {
      const bool eval = h.processes[p].pid == 5230;
      process_row row{index,
                      h.processes[p].pid,
                      eval ? "bob" : "alice",
                      eval ? "python eval.py --ckpt out/ckpt.pt"
                           : "python train.py --local_rank " + std::to_string(i),
                      h.processes[p].used_memory_bytes,
                      false};
      row.sm_util_percent = h.processes[p].sm_util_percent;
      row.share = shares[p];
      row.power_w = *v.now.power_w * *shares[p];
      row.energy_j = *v.now.energy_j * *shares[p];
      m.processes.push_back(row);
    }
    m.gpus.push_back(v);
  }
  return node;
}

std::string frame(const screen_model& m, const ui_state& ui, std::size_t width,
                  std::size_t height) {
  std::string out;
  for (const auto& line : render_frame(m, ui, width, height, /*color=*/false)) {
    EXPECT_LE(cells(line), width) << line;
    out += line + "\n";
  }
  return out;
}

TEST(GoldenMonitor, EveryViewOfASimulatedNode) {
  const auto node = watch();
  const screen_model& m = node->model;
  ui_state ui;
  testing::expect_golden("monitor/overview-80x24.txt", frame(m, ui, 80, 24));
  testing::expect_golden("monitor/overview-120x40.txt", frame(m, ui, 120, 40));
  ui.focus = 1;
  testing::expect_golden("monitor/gpu-80x24.txt", frame(m, ui, 80, 24));
  testing::expect_golden("monitor/gpu-120x40.txt", frame(m, ui, 120, 40));
  ui = ui_state{};
  ui.view = view_kind::processes;
  testing::expect_golden("monitor/processes-80x24.txt", frame(m, ui, 80, 24));
  testing::expect_golden("monitor/processes-120x40.txt", frame(m, ui, 120, 40));
  ui.view = view_kind::graphs;
  testing::expect_golden("monitor/graphs-120x40.txt", frame(m, ui, 120, 40));
  ui = ui_state{};
  ui.help = true;
  testing::expect_golden("monitor/help-80x24.txt", frame(m, ui, 80, 24));
  ui = ui_state{};
  ui.sort = sort_key::power;
  ui.reverse = true;
  ui.paused = true;
  testing::expect_golden("monitor/sorted-paused-120x40.txt", frame(m, ui, 120, 40));
}

}  // namespace
}  // namespace joules::monitor
