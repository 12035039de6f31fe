// Golden files of the summary a run ends with (tests/golden/summary; `make golden` rewrites them):
// `joules wrap` on eight simulated H100s, measured by a real sampler in virtual time
// (fake_clock), so that every reading, window and joule is the same on every machine.  The
// summary is made as measurement::print_summary makes it: summarise() with wrap's steps and the
// carbon parts, as one line (logs) and as a block at 80 and 120 columns (a terminal).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <numeric>
#include <thread>

#include "backends/sim/sim_backend.hpp"
#include "carbon/carbon.hpp"
#include "fake_clock.hpp"
#include "golden.hpp"
#include "record/session_records.hpp"
#include "sampler/sampler.hpp"
#include "session/wrap_report.hpp"

namespace joules {
namespace {

const mono_time kOrigin = mono_time(std::chrono::seconds(1000));

mono_time at(double s) {
  return kOrigin + std::chrono::nanoseconds(std::llround(s * 1e9));
}

// The run: started 1 s after the sampler, set up until the first step line at 3.6 s (the
// simulated trainer computes from 1 s on), steps every 0.6 s, an evaluation, and the end at 11.5 s.
struct planned_window {
  double end_s;
  window_label label;
};

std::vector<planned_window> plan() {
  std::vector<planned_window> out;
  out.push_back({3.6, window_label{}});  // setup
  std::uint64_t step = 1;
  double t = 3.6;
  auto add_step = [&] {
    ++step;
    t += 0.6;
    window_label l;
    l.kind = window_kind::step;
    l.step = step;
    l.step_gap = 1;
    l.total = 5000;
    out.push_back({t, l});
  };
  for (int i = 0; i < 10; ++i)
    add_step();
  window_label eval;
  eval.kind = window_kind::phase;
  eval.phase = "eval";
  t += 0.8;
  out.push_back({t, eval});
  add_step();
  window_label tail;
  tail.kind = window_kind::tail;
  out.push_back({11.5, tail});
  return out;
}

struct measured_run {
  run_context ctx;
  run_outcome out;
  std::vector<summary_part> steps;
};

measured_run measure() {
  testing::fake_clock clock(kOrigin);
  sim_options sim;
  sim.clock = [&clock] { return clock.now(); };
  sampler_options options;
  options.interval = std::chrono::milliseconds(100);
  sampler s([&sim] { return open_sim_backend(sim); }, options, clock);
  std::vector<std::size_t> all(s.hardware().devices().size());
  std::iota(all.begin(), all.end(), std::size_t{0});
  s.start(all);
  clock.wait_idle();
  // What the backend says about itself, while it is open (finish() closes it).
  const backend_meta meta = s.hardware().meta();
  const std::vector<device_info> devices = s.hardware().devices();
  clock.run_until(at(1.0));
  s.boundary(at(1.0));
  const auto windows_planned = plan();
  for (std::size_t i = 0; i + 1 < windows_planned.size(); ++i) {
    clock.run_until(at(windows_planned[i].end_s));
    s.boundary(at(windows_planned[i].end_s));
  }
  // Every read up to the end first: finish() then starts from a sampler that waits.
  clock.run_until(at(windows_planned.back().end_s));
  std::vector<window_result> windows;
  {
    // finish() waits for the sampler's last reads: a second thread moves virtual time meanwhile.
    std::jthread driver([&clock](std::stop_token stop) {
      while (clock.wait_idle(2, stop)) {
        if (const auto next = clock.next_deadline()) clock.advance_to(*next);
      }
    });
    windows = s.finish(at(windows_planned.back().end_s));
  }

  measured_run r;
  run_context& ctx = r.ctx;
  ctx.subcommand = "wrap";
  ctx.run_id = "golden-run";
  ctx.hostname = "node7";
  ctx.command = {"torchrun", "--standalone", "--nproc_per_node=8", "train.py"};
  ctx.backend = meta;
  ctx.devices = devices;
  ctx.interval_ms = 100;
  for (const device_kind k : {device_kind::cpu, device_kind::dram}) {
    component_status c;
    c.kind = k;
    c.detail = "no /sys/class/powercap (a VM, or a container that masks powercap)";
    ctx.components.push_back(c);
  }
  carbon::settings cs;
  cs.region = "FR";
  cs.price_per_kwh = 0.25;
  cs.currency = "EUR";
  ctx.carbon = carbon::resolve(cs);
  namespace chr = std::chrono;
  ctx.start_wall = chr::sys_days{chr::year{2026} / chr::November / 22} + chr::hours(18) +
                   chr::minutes(4) + chr::seconds(5);
  ctx.start_mono = at(1.0);

  EXPECT_EQ(windows.size(), windows_planned.size());
  wrap_settings ws;
  ws.tokens_per_step = 16384;
  ws.total_steps = 5000;
  wrap_report report(ctx, ws, nullptr, [](const std::string&) {});
  run_outcome& out = r.out;
  for (std::size_t i = 0; i < windows.size() && i < windows_planned.size(); ++i) {
    report.add(windows[i], windows_planned[i].label);
    if (i == 0) {
      out.window = windows[i];
      continue;
    }
    join_window(out.window, windows[i]);  // the run is every window together
  }
  out.end_mono = at(windows_planned.back().end_s);
  out.end_wall = ctx.start_wall + std::chrono::milliseconds(10500);
  out.exit_code = 0;
  out.devices.resize(ctx.devices.size());
  r.steps = report.summary();
  return r;
}

TEST(GoldenSummary, AWrappedRunOnEightSimulatedGpus) {
  const measured_run r = measure();
  const run_summary sum = summarise(r.ctx, r.out, r.steps);
  testing::expect_golden("summary/wrap-line.txt", sum.line() + "\n");
  testing::expect_golden("summary/wrap-block-80.txt", sum.block(80));
  testing::expect_golden("summary/wrap-block-120.txt", sum.block(120));
  // Without wrap's steps and without a region: what `joules run` prints.
  run_context plain = r.ctx;
  plain.subcommand = "run";
  plain.carbon = carbon::resolve(carbon::settings{});
  testing::expect_golden("summary/run-block-80.txt", summarise(plain, r.out, {}).block(80));
}

}  // namespace
}  // namespace joules
