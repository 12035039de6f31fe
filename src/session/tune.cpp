#include "session/tune.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "backends/composite/open_backend.hpp"
#include "control/journal.hpp"
#include "control/permission.hpp"
#include "session/device_choice.hpp"
#include "session/tune_hooks.hpp"
#include "session/tune_plan.hpp"
#include "text/escape.hpp"
#include "tuning/search.hpp"

namespace joules::session {

int tune(const measure_settings& settings, const wrap_settings& steps, const wrap_output& output,
         const tune_settings& tune) {
  tune_hooks hooks(steps, tune);
  return wrap(settings, steps, output, &hooks);
}

namespace {

std::string limits_text(const std::vector<std::uint32_t>& limits) {
  std::string out;
  for (const auto mw : limits)
    out += (out.empty() ? "" : ", ") + control::watts_text(mw);
  return out;
}

}  // namespace

int tune_dry_run(const measure_settings& settings, const tune_settings& tune) {
  backend_options gpus_only = settings.backend;
  gpus_only.components.cpu = false;
  gpus_only.components.dram = false;
  sampler readings([&] { return open_backend(gpus_only); }, sampler_options{});
  const device_choice choice = choose_devices(readings, settings.gpus);
  const limit_plan plan = plan_limits(readings, choice.devices, tune.limits, "--limits",
                                      tune.limits_text, tune.limit_step_mw);
  std::string out = "joules tune --dry-run: nothing is changed and no command is run\n";
  const auto row = [&](std::string_view label, const std::string& text) {
    out += fmt::format("  {:<11}{}\n", label, text);
  };
  if (!plan.gpus.empty()) {
    const auto& first = plan.gpus.front().info;
    row("GPUs",
        fmt::format("{} ({}x {}{}), {}", plan.gpu_list(), plan.gpus.size(),
                    text::escape_for_terminal(first.name), first.simulated ? ", simulated" : "",
                    tune.per_gpu ? "a limit per GPU" : "one limit for all"));
  }
  const auto w = [](const std::optional<std::uint32_t>& mw) {
    return mw ? control::watts_text(*mw) : std::string("unknown");
  };
  const auto limits_of = [&](const planned_gpu& g) {
    const auto& l = g.limits;
    const std::string range = l.min_mw && l.max_mw
                                  ? fmt::format("range {} to {}", w(l.min_mw), w(l.max_mw))
                                  : std::string("range unknown");
    return fmt::format("now {}, default {}, {}", w(l.current_mw), w(l.default_mw), range);
  };
  // One row when every GPU has the same limits (the usual node), else one per GPU.
  bool same = true;
  for (const auto& g : plan.gpus)
    same = same && limits_of(g) == limits_of(plan.gpus.front());
  if (same && !plan.gpus.empty()) {
    row("limits", limits_of(plan.gpus.front()));
  } else {
    for (const auto& g : plan.gpus)
      row(fmt::format("GPU {}", g.info.index), limits_of(g));
  }
  if (!plan.unavailable.empty()) {
    row("cannot", plan.unavailable + "; the command would run untuned, measured as by joules wrap");
    std::fputs(out.c_str(), stdout);
    return 0;
  }
  tuning::limit_search search(plan.limits, plan.baseline_mw, tune.goal);
  const auto coarse = search.coarse();
  row("goal", tune.goal.describe());
  row("baseline", control::watts_text(plan.baseline_mw) + " (the limit in force), first");
  row("coarse", limits_text(coarse) + (tune.goal.kind == tuning::goal_kind::time_within
                                           ? ", highest first, down to the first one too slow"
                                           : ", highest first"));
  const std::size_t fine = coarse.size() < search.grid().size() ? 4 : 0;
  row("fine", fine > 0 ? fmt::format("up to {} limits on the {} grid around the best", fine,
                                     control::watts_text(tune.limit_step_mw))
                       : std::string("none (the coarse pass covers the grid)"));
  const std::uint64_t per_limit = tune.settle_steps + tune.profile_steps;
  const bool baseline_coarse =
      std::find(coarse.begin(), coarse.end(), plan.baseline_mw) != coarse.end();
  const std::uint64_t limits = coarse.size() + fine + (baseline_coarse ? 0 : 1);
  row("steps", fmt::format("{} to settle and {} measured per limit: at most about {} steps of "
                           "profiling",
                           tune.settle_steps, tune.profile_steps, limits * per_limit));
  row("permission", control::process_permission().describe());
  row("journal", text::escape_for_terminal(control::state_dir()));
  std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace joules::session
