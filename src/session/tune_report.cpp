// What `joules tune` adds to the end of a run: the "tune" object of session_end and the tune
// part of the summary (docs/jsonl-schema.md, docs/tuning.md).

#include <fmt/format.h>

#include "session/tune_hooks.hpp"
#include "util/json_writer.hpp"
#include "util/strings.hpp"

namespace joules::session {
namespace {

// The figures of a finished tune: what profiling cost in steps, the change per step, the saving.
struct tune_figures {
  std::vector<tuning::point> points;  // the limits profiled
  std::optional<tuning::point> baseline;
  std::uint64_t profiling_steps = 0;  // steps before the chosen limit took over
  std::uint64_t tuned_steps = 0;      // steps at the chosen limit
  std::optional<double> tuned_energy_per_step_j;
  std::optional<double> energy_change;  // chosen against baseline, per step
  std::optional<double> time_change;
  std::optional<double> saved_j;            // over the tuned steps
  std::optional<double> projected_saved_j;  // over the whole run, when its length is known
};

}  // namespace

void tune_hooks::finish(measurement& m, std::vector<summary_part>& summary) {
  m.add_section("tune", section_json());
  summary.push_back(summary_text());
}

namespace {

tune_figures figures_of(const tuning::limit_profile& profile, std::optional<std::size_t> tuned,
                        std::uint32_t baseline_mw, const std::optional<tuning::point>& chosen,
                        std::optional<std::uint64_t> total_steps) {
  tune_figures f;
  const auto& stages = profile.stages();
  const std::size_t until = tuned.value_or(stages.size());
  f.points = profile.points(until);
  if (const tuning::point* b = tuning::find_point(f.points, baseline_mw)) f.baseline = *b;
  for (std::size_t i = 0; i < until; ++i)
    f.profiling_steps += stages[i].steps_seen;
  if (!tuned || !chosen || !f.baseline) return f;
  const tuning::stage& s = stages[*tuned];
  f.tuned_steps = s.steps_seen;
  f.tuned_energy_per_step_j =
      s.steps > 0 ? s.energy_j / static_cast<double>(s.steps) : chosen->energy_per_step_j;
  const double base_e = f.baseline->energy_per_step_j;
  if (base_e > 0) f.energy_change = chosen->energy_per_step_j / base_e - 1.0;
  if (f.baseline->seconds_per_step > 0) {
    f.time_change = chosen->seconds_per_step / f.baseline->seconds_per_step - 1.0;
  }
  const double per_step = base_e - *f.tuned_energy_per_step_j;
  f.saved_j = per_step * static_cast<double>(f.tuned_steps);
  if (total_steps && *total_steps > f.profiling_steps) {
    f.projected_saved_j = per_step * static_cast<double>(*total_steps - f.profiling_steps);
  }
  return f;
}

std::string_view state_name(bool unavailable, bool stopped, bool tuned) {
  if (unavailable) return "unavailable";
  if (stopped) return "stopped";
  return tuned ? "tuned" : "profiling";
}

}  // namespace

std::string tune_hooks::section_json() const {
  json_writer j;
  j.begin_object();
  j.field("goal", to_string(ts_.goal.kind));
  j.field("max_slowdown", ts_.goal.kind == tuning::goal_kind::time_within
                              ? std::optional(ts_.goal.max_slowdown)
                              : std::nullopt);
  j.field("eta",
          ts_.goal.kind == tuning::goal_kind::cost ? std::optional(ts_.goal.eta) : std::nullopt);
  j.field("per_gpu", ts_.per_gpu);
  const bool unavailable = state_ == state::unavailable;
  j.field("status", state_name(unavailable, state_ == state::stopped, chosen_.has_value()));
  j.field("reason", unavailable                ? std::optional(unavailable_)
                    : state_ == state::stopped ? std::optional(stopped_)
                                               : std::nullopt);
  j.field("baseline_limit_w",
          plan_.baseline_mw > 0 ? std::optional(watts_of(plan_.baseline_mw)) : std::nullopt);
  j.field("chosen_limit_w",
          chosen_ && !ts_.per_gpu ? std::optional(watts_of(chosen_->limit_mw)) : std::nullopt);
  j.key("gpus").begin_array();
  for (std::size_t k = 0; k < plan_.gpus.size(); ++k) {
    const auto& g = plan_.gpus[k];
    j.begin_object().field("index", g.info.index).field("uuid", g.info.uuid);
    j.field("original_limit_w",
            g.limits.current_mw ? std::optional(watts_of(*g.limits.current_mw)) : std::nullopt);
    j.field("chosen_limit_w",
            chosen_ ? std::optional(watts_of(ts_.per_gpu ? chosen_per_gpu_[k] : chosen_->limit_mw))
                    : std::nullopt);
    std::optional<bool> restored;
    for (const auto& o : restored_) {
      if (o.gpu == k) restored = o.result.ok();
    }
    j.field("restored", restored);
    j.end_object();
  }
  j.end_array();
  if (profile_) {
    const tune_figures f =
        figures_of(*profile_, tuned_stage_, plan_.baseline_mw, chosen_, total_steps_);
    j.key("points").begin_array();
    for (const auto& p : f.points) {
      j.begin_object().field("limit_w", watts_of(p.limit_mw));
      j.field("energy_per_step_j", p.energy_per_step_j)
          .field("seconds_per_step", p.seconds_per_step);
      j.field("steps", p.steps).end_object();
    }
    j.end_array();
    j.field("profiled_limits", static_cast<std::uint64_t>(f.points.size()));
    j.field("profiling_steps", f.profiling_steps);
    j.field("energy_per_step_change", f.energy_change).field("time_per_step_change", f.time_change);
    j.field("tuned_steps", f.tuned_steps)
        .field("tuned_energy_per_step_j", f.tuned_energy_per_step_j);
    j.field("saved_j", f.saved_j).field("total_steps", total_steps_);
    j.field("projected_saved_j", f.projected_saved_j);
  }
  j.field("restore_failed", restore_failed_);
  j.end_object();
  return j.take();
}

summary_part tune_hooks::summary_text() const {
  if (state_ == state::unavailable) return {"tune", "not tuned: " + unavailable_, ""};
  const tune_figures f =
      figures_of(*profile_, tuned_stage_, plan_.baseline_mw, chosen_, total_steps_);
  const std::string restored =
      restore_failed_ ? "a limit could not be restored (see above)" : "limits restored at the end";
  if (state_ == state::stopped) {
    return {"tune", fmt::format("stopped: {}; {}", stopped_, restored), ""};
  }
  if (!chosen_ || !f.energy_change || !f.time_change) {
    return {"tune",
            fmt::format("the run ended while profiling ({} limits measured over {} steps); {}",
                        f.points.size(), f.profiling_steps, restored),
            ""};
  }
  std::string where = fmt::format("{:g} W", watts_of(chosen_->limit_mw));
  if (ts_.per_gpu) {
    where.clear();
    for (std::size_t k = 0; k < chosen_per_gpu_.size(); ++k) {
      where += fmt::format("{}GPU {} {:g} W", k == 0 ? "" : ", ", plan_.gpus[k].info.index,
                           watts_of(chosen_per_gpu_[k]));
    }
  }
  std::string text = fmt::format(
      "{} ({}): {:+.1f} % energy and {:+.1f} % time per step against {:g} W; {} steps of "
      "profiling ({} limits); {} saved over {} steps",
      where, ts_.goal.describe(), *f.energy_change * 100.0, *f.time_change * 100.0,
      watts_of(plan_.baseline_mw), f.profiling_steps, f.points.size(),
      format_joules(f.saved_j.value_or(0.0)), f.tuned_steps);
  if (f.projected_saved_j && total_steps_) {
    text += fmt::format(", {} projected for {} steps", format_joules(*f.projected_saved_j),
                        *total_steps_);
  }
  text += "; " + restored;
  return {"tune", text,
          "energy per step of the tuned GPUs, each limit measured after its first steps settled"};
}

}  // namespace joules::session
