#include "session/sweep.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "backends/composite/open_backend.hpp"
#include "control/journal.hpp"
#include "control/limit_plan.hpp"
#include "control/permission.hpp"
#include "session/device_choice.hpp"
#include "session/sweep_hooks.hpp"
#include "term/messages.hpp"
#include "text/escape.hpp"
#include "tuning/pareto.hpp"
#include "tuning/sweep_plot.hpp"
#include "util/error.hpp"
#include "util/json_writer.hpp"

namespace joules::session {
namespace {

// The directory of `path` is writable and `path`, if it exists, too: checked before anything
// runs, written at the end.
void check_writable(const std::string& path) {
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  const bool exists = access(path.c_str(), F_OK) == 0;
  if ((exists && access(path.c_str(), W_OK) != 0) || (!exists && access(dir.c_str(), W_OK) != 0)) {
    throw usage_error(fmt::format("--svg '{}': cannot write there", path));
  }
}

// The points of the sweep: per step when every run had measured steps, else per run.
std::vector<tuning::point> points_of(const std::vector<sweep_result>& results, bool& per_step) {
  per_step = !results.empty();
  for (const auto& r : results)
    per_step = per_step && r.steps > 0;
  std::vector<tuning::point> out;
  for (const auto& r : results) {
    tuning::point p;
    p.limit_mw = r.limit_mw;
    p.steps = r.steps;
    const double n = per_step ? static_cast<double>(r.steps) : 1.0;
    p.energy_per_step_j = (per_step ? r.energy_j : r.run_energy_j) / n;
    p.seconds_per_step = (per_step ? r.seconds : r.run_seconds) / n;
    out.push_back(p);
  }
  return out;
}

std::string table(const std::vector<tuning::point>& pts, const std::vector<std::size_t>& front,
                  std::optional<std::size_t> knee, bool per_step) {
  const char* unit = per_step ? "step" : "run";
  std::string out =
      fmt::format("  {:>9}  {:>10}  {:>9}  {:>8}  {:>8}  {:>8}\n", "limit",
                  fmt::format("J/{}", unit), fmt::format("s/{}", unit), "avg W", "energy", "time");
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const auto& p = pts[i];
    const auto& ref = pts.front();
    const bool is_ref = i == 0;
    const std::string de =
        is_ref ? "-"
               : fmt::format("{:+.1f} %", (p.energy_per_step_j / ref.energy_per_step_j - 1) * 100);
    const std::string dt =
        is_ref ? "-"
               : fmt::format("{:+.1f} %", (p.seconds_per_step / ref.seconds_per_step - 1) * 100);
    std::string mark;
    if (std::find(front.begin(), front.end(), i) != front.end()) mark = "front";
    if (knee && *knee == i) mark += ", knee";
    out += fmt::format("  {:>9}  {:>10.4g}  {:>9.4g}  {:>8.0f}  {:>8}  {:>8}  {}\n",
                       control::watts_text(p.limit_mw), p.energy_per_step_j, p.seconds_per_step,
                       p.seconds_per_step > 0 ? p.energy_per_step_j / p.seconds_per_step : 0.0, de,
                       dt, mark);
  }
  return out;
}

std::string json_of(const sweep_state& st, const std::vector<sweep_result>& results,
                    const std::vector<tuning::point>& pts, const std::vector<std::size_t>& front,
                    std::optional<std::size_t> knee, bool per_step, int status) {
  json_writer j;
  j.begin_object();
  j.field("unit", per_step ? "step" : "run");
  j.field("warmup_steps", st.warmup_steps).field("steps", st.settings->steps);
  j.key("gpus").begin_array();
  for (const auto& g : st.plan.gpus) {
    j.begin_object().field("index", g.info.index).field("uuid", g.info.uuid);
    j.field("name", g.info.name).end_object();
  }
  j.end_array();
  j.key("points").begin_array();
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const auto& p = pts[i];
    j.begin_object().field("limit_w", p.limit_mw / 1000.0);
    j.field(per_step ? "energy_per_step_j" : "energy_j", p.energy_per_step_j);
    j.field(per_step ? "seconds_per_step" : "seconds", p.seconds_per_step);
    j.field("avg_power_w", p.seconds_per_step > 0
                               ? std::optional(p.energy_per_step_j / p.seconds_per_step)
                               : std::nullopt);
    j.field("steps", p.steps).field("exit_status", results[i].exit_status);
    j.field("pareto", std::find(front.begin(), front.end(), i) != front.end());
    j.field("knee", knee && *knee == i).end_object();
  }
  j.end_array();
  j.field("knee_limit_w", knee ? std::optional(pts[*knee].limit_mw / 1000.0) : std::nullopt);
  j.field("complete", status == 0);
  j.end_object();
  return j.take() + "\n";
}

int dry_run(const measure_settings& settings, const sweep_settings& ss) {
  backend_options gpus_only = settings.backend;
  gpus_only.components.cpu = false;
  gpus_only.components.dram = false;
  sampler readings([&] { return open_backend(gpus_only); }, sampler_options{});
  const device_choice choice = choose_devices(readings, settings.gpus);
  const limit_plan plan =
      plan_limits(readings, choice.devices, ss.limits, "--limits", ss.limits_text, 0);
  std::string out = "joules sweep --dry-run: nothing is changed and no command is run\n";
  if (!plan.gpus.empty()) {
    out += fmt::format("  GPUs        {} ({}x {})\n", plan.gpu_list(), plan.gpus.size(),
                       text::escape_for_terminal(plan.gpus.front().info.name));
  }
  if (!plan.unavailable.empty()) {
    out += fmt::format("  cannot      {}\n", plan.unavailable);
    std::fputs(out.c_str(), stdout);
    return 0;
  }
  std::string limits;
  for (const auto mw : plan.limits)
    limits += (limits.empty() ? "" : ", ") + control::watts_text(mw);
  out += fmt::format("  limits      {}: one run of the command at each\n", limits);
  out += fmt::format("  each run    {}\n",
                     ss.steps ? fmt::format("ended after {} measured steps", *ss.steps)
                              : std::string("to its end"));
  out += fmt::format("  permission  {}\n", control::process_permission().describe());
  out += fmt::format("  journal     {}\n", text::escape_for_terminal(control::state_dir()));
  std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace

int sweep(const measure_settings& settings, const wrap_settings& steps, const wrap_output& output,
          const sweep_settings& ss) {
  if (ss.dry_run) return dry_run(settings, ss);
  if (ss.svg) check_writable(*ss.svg);
  sweep_state st;
  st.settings = &ss;
  st.warmup_steps = steps.warmup_steps;
  std::vector<sweep_result> results;
  int status = 0;
  for (std::size_t i = 0; i < ss.limits.size(); ++i) {
    measure_settings run = settings;
    run.quiet = true;  // one table at the end, not a summary per run
    if (i > 0) run.append = true;
    run.labels.emplace_back("power_limit_w", fmt::format("{:g}", ss.limits[i] / 1000.0));
    sweep_run hooks(st, ss.limits[i], i == 0);
    const int rc = wrap(run, steps, output, &hooks);
    sweep_result r = hooks.result();
    r.exit_status = rc;
    results.push_back(r);
    if (rc != 0 && !r.stopped) {
      term::print_warning(
          fmt::format("the command ended with status {} at {}: the sweep stops "
                      "there",
                      rc, control::watts_text(ss.limits[i])));
      status = rc;
      break;
    }
  }
  st.claim.reset();
  bool per_step = true;
  const auto pts = points_of(results, per_step);
  const auto front = tuning::pareto_front(pts);
  const auto knee = tuning::knee(pts, front);
  if (ss.json) {
    std::fputs(json_of(st, results, pts, front, knee, per_step, status).c_str(), stdout);
  } else {
    std::string out =
        fmt::format("joules sweep: {} ({}x {}), {}\n", st.plan.gpu_list(), st.plan.gpus.size(),
                    text::escape_for_terminal(st.device_name),
                    per_step ? fmt::format("per step after {} warm-up steps", st.warmup_steps)
                             : std::string("per run (no step lines in some runs)"));
    out += table(pts, front, knee, per_step);
    if (knee) {
      out += fmt::format("knee: {}; below it each joule saved costs more time\n",
                         control::watts_text(pts[*knee].limit_mw));
    }
    std::fputs(out.c_str(), stdout);
  }
  if (ss.svg) {
    std::ofstream svg(*ss.svg, std::ios::trunc);
    svg << tuning::sweep_svg(
        pts, front, knee, fmt::format("joules sweep: {} ({})", st.device_name, st.plan.gpu_list()));
    if (!svg) term::print_warning(fmt::format("--svg '{}' could not be written", *ss.svg));
  }
  return status;
}

}  // namespace joules::session
