#include "session/sweep_hooks.hpp"

#include <fmt/format.h>

#include <chrono>

#include "control/limit_plan.hpp"
#include "text/escape.hpp"
#include "util/error.hpp"

namespace joules::session {

sweep_run::sweep_run(sweep_state& state, std::uint32_t limit_mw, bool first)
    : state_(state), first_(first) {
  result_.limit_mw = limit_mw;
}

void sweep_run::check(sampler& s, const std::vector<std::size_t>& measured) {
  if (!first_) return;  // the GPUs were planned and claimed by the first run
  const sweep_settings& ss = *state_.settings;
  state_.plan = plan_limits(s, measured, ss.limits, "--limits", ss.limits_text, 0);
  if (!state_.plan.unavailable.empty()) {
    throw fatal_error(fmt::format("cannot sweep: {}", state_.plan.unavailable));
  }
  state_.device_name = state_.plan.gpus.front().info.name;
  state_.claim = std::make_unique<control::gpu_claim>(state_.plan.claimed(), "sweep");
}

void sweep_run::before_command(measurement& m) {
  control_ = std::make_unique<limit_control>(m.sampler(), *state_.claim);
  if (first_) {
    const control_result probe = control_->probe(control::kControlWait);
    if (!probe.ok()) {
      control_.reset();
      throw fatal_error(fmt::format("cannot sweep: the power limit cannot be set: {}{}",
                                    text::escape_for_terminal(probe.detail),
                                    probe.status == control_status::no_permission
                                        ? "; changing a power limit needs root or CAP_SYS_ADMIN"
                                        : ""));
    }
  } else {
    state_.claim->write_journal();
  }
  for (const auto& o : control_->set_and_wait(result_.limit_mw, control::kControlWait)) {
    if (o.result.ok()) continue;
    throw fatal_error(fmt::format(
        "cannot sweep: setting GPU {} to {} failed: {}", state_.claim->gpus()[o.gpu].index,
        control::watts_text(o.limit_mw), text::escape_for_terminal(o.result.detail)));
  }
  say(fmt::format("sweep: {} at {}", state_.plan.gpu_list(),
                  control::watts_text(result_.limit_mw)));
}

void sweep_run::on_window(const window_result& w, const window_label& l) {
  double energy = 0.0;
  bool whole = true;
  for (const auto& g : state_.plan.gpus) {
    const auto& dw = w.devices[g.position];
    if (!dw.energy_uj) {
      whole = false;
      continue;
    }
    energy += to_joules(*dw.energy_uj).value;
  }
  result_.run_energy_j += energy;
  result_.run_seconds += w.duration_s();
  if (l.kind != window_kind::step) return;
  const bool warming = steps_seen_ < state_.warmup_steps;
  steps_seen_ += l.step_gap;
  if (warming || !whole) return;
  if (state_.settings->steps && result_.steps >= *state_.settings->steps) return;
  result_.steps += l.step_gap;
  result_.energy_j += energy;
  result_.seconds += w.duration_s();
}

bool sweep_run::stop_command() {
  // Asked at each step line; the windows of the steps come back a little later, so the command
  // runs on a few steps past --steps (at the same limit) until the last one is accounted.
  const auto& steps = state_.settings->steps;
  if (!steps || result_.steps < *steps) return false;
  result_.stopped = true;
  return true;
}

void sweep_run::after_command() {
  if (!control_) return;
  for (const auto& o : control_->restore(control::kControlWait)) {
    if (o.result.ok()) continue;
    say(
        fmt::format("warning: sweep: GPU {}'s power limit could not be set back to {}: {}; the "
                    "next joules to start (or joules tune --restore) sets it back",
                    state_.claim->gpus()[o.gpu].index,
                    control::watts_text(state_.claim->gpus()[o.gpu].original_mw),
                    text::escape_for_terminal(o.result.detail)));
  }
  control_.reset();
}

}  // namespace joules::session
