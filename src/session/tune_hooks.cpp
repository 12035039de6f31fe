#include "session/tune_hooks.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>

#include "control/permission.hpp"
#include "record/session_records.hpp"
#include "text/escape.hpp"
#include "util/json_writer.hpp"
#include "util/strings.hpp"

namespace joules::session {
namespace {

std::string percent(double fraction) {
  return fmt::format("{:+.1f} %", fraction * 100.0);
}

// The fix for a failed change, in words.
std::string control_hint(const control_result& r) {
  switch (r.status) {
    case control_status::no_permission:
      return fmt::format("; changing a power limit needs root or CAP_SYS_ADMIN (this process: {})",
                         control::process_permission().describe());
    case control_status::not_supported:
      return "; this GPU or driver does not let its power limit be changed";
    default:
      return {};
  }
}

}  // namespace

tune_hooks::tune_hooks(const wrap_settings& ws, const tune_settings& ts) : ws_(ws), ts_(ts) {
  if (ws_.total_steps) total_steps_ = ws_.total_steps;
}

tune_hooks::~tune_hooks() = default;

void tune_hooks::check(sampler& s, const std::vector<std::size_t>& measured) {
  plan_ = plan_limits(s, measured, ts_.limits, "--limits", ts_.limits_text, ts_.limit_step_mw);
  if (!plan_.unavailable.empty()) {
    unavailable_ = plan_.unavailable;
    return;
  }
  // Refused here, before the outputs open and the command starts: another joules has the GPUs.
  claim_ = std::make_unique<control::gpu_claim>(plan_.claimed(), "tune");
  state_ = state::profiling;
}

void tune_hooks::before_command(measurement& m) {
  m_ = &m;
  if (state_ == state::profiling) {
    control_ = std::make_unique<limit_control>(m.sampler(), *claim_);
    const control_result probe = control_->probe(control::kControlWait);
    if (!probe.ok()) {
      unavailable_ = fmt::format("the power limit cannot be set: {}{}",
                                 text::escape_for_terminal(probe.detail), control_hint(probe));
      control_.reset();
      claim_.reset();
      state_ = state::unavailable;
    }
  }
  if (state_ == state::unavailable) {
    say(
        fmt::format("warning: tune: {}; the command runs at its limits as they are, measured as "
                    "by joules wrap",
                    unavailable_));
    record("unavailable", [&](json_writer& j) { j.field("reason", unavailable_); });
    return;
  }
  tuning::goal g = ts_.goal;
  g.full_power_w = 0.0;
  for (const auto& c : claim_->gpus())
    g.full_power_w += watts_of(c.bounds.max_mw);
  ts_.goal = g;
  search_.emplace(plan_.limits, plan_.baseline_mw, g);
  profile_.emplace(plan_.gpus.size());
  profile_->begin(plan_.baseline_mw, 0, std::max(ts_.settle_steps, ws_.warmup_steps));
  const auto coarse = search_->coarse();
  say(fmt::format(
      "tune: {} ({}): measuring {} W as it is, then limits from {} to {} W, {} "
      "steps each after {} to settle; goal: {}",
      plan_.gpu_list(), ts_.per_gpu ? "a limit per GPU" : "one limit for all",
      watts_of(plan_.baseline_mw), watts_of(coarse.front()), watts_of(search_->grid().back()),
      ts_.profile_steps, ts_.settle_steps, g.describe()));
  record("baseline", [&](json_writer& j) {
    j.field("limit_w", watts_of(plan_.baseline_mw)).field("from_window", std::uint64_t{0});
    j.key("grid_w").begin_array();
    for (const auto mw : search_->grid())
      j.value(watts_of(mw));
    j.end_array();
  });
}

void tune_hooks::command_started() {
  started_ = true;
  for (const auto& r : early_records_)
    m_->sink()->write(r);
  early_records_.clear();
}

void tune_hooks::record(const std::string& event, const std::function<void(json_writer&)>& fields) {
  if (m_ == nullptr || m_->sink() == nullptr) return;
  json_writer j;
  j.begin_object();
  common_record_fields(j, "tune", m_->context());
  j.field("event", event);
  fields(j);
  j.end_object();
  if (!started_) {
    early_records_.push_back(j.take());
    return;
  }
  m_->sink()->write(j.str());
}

void tune_hooks::collect() {
  if (!control_) return;
  for (const auto& o : control_->take()) {
    if (o.result.ok() || state_ == state::stopped) continue;
    const auto& g = claim_->gpus()[o.gpu];
    stop(fmt::format("setting GPU {} to {} W failed: {}{}", g.index, watts_of(o.limit_mw),
                     text::escape_for_terminal(o.result.detail), control_hint(o.result)));
  }
}

void tune_hooks::stop(const std::string& why) {
  state_ = state::stopped;
  stopped_ = why;
  for (std::size_t k = 0; k < claim_->gpus().size(); ++k)
    control_->set(claim_->gpus()[k].original_mw, k);
  say(
      fmt::format("warning: tune: {}; tuning stopped and every GPU set back to its limit before "
                  "tune",
                  why));
  record("stopped", [&](json_writer& j) { j.field("reason", why); });
}

void tune_hooks::on_step(std::uint64_t window, mono_time t) {
  (void)t;
  collect();
  if (state_ == state::profiling && switch_wanted_) advance(window);
}

void tune_hooks::advance(std::uint64_t window) {
  switch_wanted_ = false;
  const auto next = search_->next(profile_->points());
  if (!next) {
    choose(window);
    return;
  }
  control_->set(*next);
  profile_->begin(*next, window + 1, ts_.settle_steps);
  record("try", [&](json_writer& j) {
    j.field("limit_w", watts_of(*next)).field("from_window", window + 1);
  });
}

std::uint32_t tune_hooks::chosen_for(std::size_t k) const {
  if (!chosen_) return claim_ ? claim_->gpus()[k].original_mw : 0;
  return ts_.per_gpu ? chosen_per_gpu_[k] : chosen_->limit_mw;
}

void tune_hooks::choose(std::uint64_t window) {
  const auto points = profile_->points();
  chosen_ = search_->best(points);
  tuned_stage_ = profile_->stages().size();
  if (ts_.per_gpu) {
    // Each GPU its own choice, from its own energy per step and the job's time per step.
    for (std::size_t k = 0; k < claim_->gpus().size(); ++k) {
      const auto mine = profile_->points_of_gpu(k);
      const tuning::point* base = tuning::find_point(mine, plan_.baseline_mw);
      tuning::goal g = ts_.goal;
      g.full_power_w = watts_of(claim_->gpus()[k].bounds.max_mw);
      const std::uint32_t mw =
          tuning::choose(g, mine, base != nullptr ? *base : mine.front()).limit_mw;
      chosen_per_gpu_.push_back(mw);
      control_->set(mw, k);
    }
  } else {
    control_->set(chosen_->limit_mw);
  }
  profile_->begin(ts_.per_gpu ? 0 : chosen_->limit_mw, window + 1, ts_.settle_steps);
  state_ = state::tuned;
  const tuning::point* base = tuning::find_point(points, plan_.baseline_mw);
  std::string where;
  if (ts_.per_gpu) {
    for (std::size_t k = 0; k < chosen_per_gpu_.size(); ++k) {
      where += fmt::format("{}GPU {} {:g} W", k == 0 ? "" : ", ", claim_->gpus()[k].index,
                           watts_of(chosen_per_gpu_[k]));
    }
  } else {
    where = fmt::format("{:g} W for {}", watts_of(chosen_->limit_mw), plan_.gpu_list());
  }
  const double de = base->energy_per_step_j > 0
                        ? chosen_->energy_per_step_j / base->energy_per_step_j - 1.0
                        : 0.0;
  const double dt =
      base->seconds_per_step > 0 ? chosen_->seconds_per_step / base->seconds_per_step - 1.0 : 0.0;
  say(
      fmt::format("tune: chose {} after {} limits: {} energy and {} time per step against {:g} W; "
                  "kept for the rest of the run",
                  where, points.size(), percent(de), percent(dt), watts_of(plan_.baseline_mw)));
  record("choice", [&](json_writer& j) {
    j.field("limit_w", ts_.per_gpu ? std::nullopt : std::optional(watts_of(chosen_->limit_mw)));
    j.key("gpu_limits_w").begin_array();
    for (std::size_t k = 0; k < claim_->gpus().size(); ++k)
      j.value(watts_of(chosen_for(k)));
    j.end_array();
    j.field("from_window", window + 1).field("goal", to_string(ts_.goal.kind));
    j.field("energy_per_step_j", chosen_->energy_per_step_j)
        .field("seconds_per_step", chosen_->seconds_per_step);
    j.field("baseline_limit_w", watts_of(plan_.baseline_mw))
        .field("energy_per_step_change", de)
        .field("time_per_step_change", dt);
    j.field("profiled_limits", static_cast<std::uint64_t>(points.size()));
  });
}

void tune_hooks::report_stage(std::size_t index) {
  const tuning::stage& s = profile_->stages()[index];
  const double e = s.energy_j / static_cast<double>(s.steps);
  const double t = s.seconds / static_cast<double>(s.steps);
  const auto points = profile_->points(index);
  const tuning::point* base = index == 0 ? nullptr : tuning::find_point(points, plan_.baseline_mw);
  std::string against;
  if (base != nullptr && base->energy_per_step_j > 0 && base->seconds_per_step > 0) {
    against = fmt::format(" ({} energy, {} time against {:g} W)",
                          percent(e / base->energy_per_step_j - 1.0),
                          percent(t / base->seconds_per_step - 1.0), watts_of(plan_.baseline_mw));
  }
  say(fmt::format("tune: {:g} W: {}/step, {:.4g} s/step over {} steps{}", watts_of(s.limit_mw),
                  format_joules(e), t, s.steps, against));
  record("measured", [&](json_writer& j) {
    j.field("limit_w", watts_of(s.limit_mw)).field("from_window", s.first_window);
    j.field("steps", s.steps).field("settle_steps", s.settle_steps);
    j.field("energy_per_step_j", e).field("seconds_per_step", t);
    j.field("avg_power_w", s.seconds > 0 ? std::optional(s.energy_j / s.seconds) : std::nullopt);
  });
}

void tune_hooks::on_window(const window_result& w, const window_label& l) {
  if (l.total) total_steps_ = ws_.total_steps ? ws_.total_steps : l.total;
  if (!profile_ || l.kind != window_kind::step) return;
  std::vector<std::optional<double>> energy;
  for (const auto& g : plan_.gpus) {
    const auto& dw = w.devices[g.position];
    energy.push_back(dw.energy_uj ? std::optional(to_joules(*dw.energy_uj).value) : std::nullopt);
  }
  profile_->add(w.index, l.step_gap, w.duration_s(), energy);
  const auto& stages = profile_->stages();
  const std::size_t last = tuned_stage_.value_or(stages.size());
  while (reported_stages_ < last && stages[reported_stages_].steps >= ts_.profile_steps)
    report_stage(reported_stages_++);
  if (state_ == state::profiling && profile_->current()->steps >= ts_.profile_steps) {
    switch_wanted_ = true;
  }
}

void tune_hooks::after_command() {
  if (!control_) {
    claim_.reset();
    return;
  }
  restored_ = control_->restore(control::kControlWait);
  std::vector<std::string> back;
  for (const auto& o : restored_) {
    const auto& g = claim_->gpus()[o.gpu];
    if (o.result.ok()) {
      back.push_back(fmt::format("{}", g.index));
      continue;
    }
    restore_failed_ = true;
    say(
        fmt::format("warning: tune: GPU {}'s power limit could not be set back to {} W: {}; its "
                    "journal stays in {}, and the next joules to start (or joules tune "
                    "--restore) sets it back",
                    g.index, watts_of(g.original_mw), text::escape_for_terminal(o.result.detail),
                    text::escape_for_terminal(claim_->dir())));
  }
  if (!back.empty()) {
    say(fmt::format("tune: power limit{} of GPU {} set back to what {} before tune",
                    back.size() > 1 ? "s" : "", fmt::join(back, ", "),
                    back.size() > 1 ? "they were" : "it was"));
  }
  record("restore", [&](json_writer& j) {
    j.key("gpus").begin_array();
    for (const auto& o : restored_) {
      const auto& g = claim_->gpus()[o.gpu];
      j.begin_object().field("index", g.index).field("uuid", g.uuid);
      j.field("limit_w", watts_of(g.original_mw)).field("restored", o.result.ok());
      j.field("error", o.result.ok() ? std::nullopt : std::optional(o.result.detail));
      j.end_object();
    }
    j.end_array();
  });
  control_.reset();
  claim_.reset();
}

}  // namespace joules::session
