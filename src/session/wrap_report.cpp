#include "session/wrap_report.hpp"

#include <fmt/format.h>

#include <chrono>

#include "carbon/carbon.hpp"
#include "util/json_writer.hpp"
#include "util/strings.hpp"

namespace joules {
namespace {

constexpr double kMinStragglerWindowS = 0.010;

// CO2e and cost of a prediction, when there are factors for them; the reason there are none is
// said once, in the summary, not at every prediction.
std::string prediction_carbon_text(const carbon::assessment& a) {
  if (!a.co2e_g && !a.cost) return {};
  return carbon::summary_text(a);
}

std::optional<double> metric(const window_label& l, std::string_view name) {
  for (const auto& m : l.metrics) {
    if (m.name == name) return m.value;
  }
  return std::nullopt;
}

std::string format_duration(double s) {
  if (s < 120) return fmt::format("{:.0f} s", s);
  if (s < 7200) return fmt::format("{:.0f} min", s / 60);
  const auto h = static_cast<long>(s / 3600);
  return fmt::format("{} h {:02} min", h,
                     static_cast<long>((s - static_cast<double>(h) * 3600) / 60));
}

std::string format_energy(double j) {
  const double kwh = j / 3.6e6;
  if (kwh >= 1.0) return fmt::format("{:.0f} J ({:.2f} kWh)", j, kwh);
  return fmt::format("{} ({:.2f} Wh)", format_joules(j), j / 3600.0);
}

}  // namespace

wrap_report::wrap_report(const run_context& ctx, const wrap_settings& settings, jsonl_sink* sink,
                         std::function<void(const std::string&)> notice)
    : ctx_(ctx),
      settings_(settings),
      sink_(sink),
      notice_(std::move(notice)),
      predictor_(settings.predict_after, settings.warmup_steps),
      stragglers_(ctx.devices.size(), settings.straggler_threshold, settings.straggler_window) {}

std::optional<double> wrap_report::tokens_of(const window_result& w, const window_label& l) const {
  if (l.kind != window_kind::step) return std::nullopt;
  // Tokens the command reported with its steps (joules_step) are counted, not estimated.
  if (l.tokens) return static_cast<double>(*l.tokens);
  if (settings_.tokens_per_step)
    return static_cast<double>(*settings_.tokens_per_step * l.step_gap);
  // A throughput printed by the trainer covers the steps the line reports.
  if (auto tps = metric(l, "tokens_per_s")) return *tps * w.duration_s();
  return std::nullopt;
}

std::optional<double> wrap_report::samples_of(const window_result& w, const window_label& l) const {
  if (l.kind != window_kind::step) return std::nullopt;
  if (settings_.samples_per_step)
    return static_cast<double>(*settings_.samples_per_step * l.step_gap);
  if (auto sps = metric(l, "samples_per_s")) return *sps * w.duration_s();
  return std::nullopt;
}

std::string wrap_report::add(const window_result& w, const window_label& l) {
  ++windows_;
  all_uj_ += w.energy_uj;
  switch (l.kind) {
    case window_kind::setup:
      setup_uj_ += w.energy_uj;
      break;
    case window_kind::step:
      steps_uj_ += w.energy_uj;
      break;
    case window_kind::phase:
      phases_uj_[l.phase] += w.energy_uj;
      break;
    case window_kind::other:
      other_uj_ += w.energy_uj;
      break;
    case window_kind::tail:
      tail_uj_ += w.energy_uj;
      break;
  }
  const double energy = to_joules(w.energy_uj).value;
  const double duration = w.duration_s();
  const bool step = l.kind == window_kind::step;
  const double gap = step ? static_cast<double>(l.step_gap) : 1.0;
  if (l.total) last_total_ = l.total;

  std::vector<std::optional<double>> per_step(w.devices.size());
  for (std::size_t d = 0; d < w.devices.size(); ++d) {
    // Stragglers are GPUs among GPUs: CPU and DRAM domains (kind cpu, dram) stay out.
    const bool gpu = d < ctx_.devices.size() && ctx_.devices[d].kind == device_kind::gpu;
    if (gpu && w.devices[d].energy_uj) per_step[d] = to_joules(*w.devices[d].energy_uj).value / gap;
  }
  const auto deviation = straggler_detector::deviations(per_step);
  const auto tokens = tokens_of(w, l);
  const auto samples = samples_of(w, l);
  if (step) {
    ++step_windows_;
    steps_counted_ += l.step_gap;
    last_step_ = l.step;
    if (tokens && *tokens > 0) {
      tokens_ += *tokens;
      tokens_uj_ += w.energy_uj;
    }
    if (samples && *samples > 0) {
      samples_ += *samples;
      samples_uj_ += w.energy_uj;
    }
    // Windows shorter than a few of the sampler's densest reads split energy between GPUs more
    // finely than the readings resolve: they are not evidence of a straggler.
    if (step_windows_ > settings_.warmup_steps && duration >= kMinStragglerWindowS) {
      for (const auto& e : stragglers_.add(l.step, per_step)) {
        straggler_events_.push_back(e);
        const auto& dev = ctx_.devices[e.device];
        notice_(fmt::format("warning: {}",
                            straggler_message(e, dev.index, dev.uuid, ctx_.devices.size())));
        if (sink_) {
          json_writer j;
          j.begin_object();
          common_record_fields(j, "straggler", ctx_);
          j.field("gpu", dev.index).field("uuid", dev.uuid).field("deviation", e.deviation);
          j.field("at_step", e.at_step)
              .field("window_steps", static_cast<std::uint64_t>(e.window_steps));
          j.end_object();
          sink_->write(j.str());
        }
      }
    }
  }

  if (sink_) {
    json_writer j;
    j.begin_object();
    common_record_fields(j, step ? "step" : "phase", ctx_);
    j.field("window", w.index);
    if (step) {
      j.field("step", l.step).field("step_gap", l.step_gap).field("total_steps", l.total);
      j.field("counter_restarted", l.counter_restarted);
    } else {
      j.field("phase",
              l.kind == window_kind::phase ? std::string_view(l.phase) : to_string(l.kind));
    }
    j.field("line", l.line == 0 ? std::nullopt : std::optional<std::uint64_t>(l.line));
    j.field("stream", l.stream ? std::optional(to_string(*l.stream)) : std::nullopt);
    j.field("start_monotonic_s", w.start_t)
        .field("end_monotonic_s", w.end_t)
        .field("duration_s", duration);
    j.field("energy_j", energy);
    if (step) j.field("energy_per_step_j", energy / gap);
    j.field("avg_power_w", duration > 0 ? std::optional(energy / duration) : std::nullopt);
    j.field("peak_power_w", w.peak_power_w);
    j.field("method", run_method(w));
    j.key("components");
    write_components_json(j, ctx_, w, duration);
    carbon::write_fields(j, carbon::assess(ctx_.carbon, energy));
    j.field("tokens", tokens);
    j.field("joules_per_token",
            tokens && *tokens > 0 ? std::optional(energy / *tokens) : std::nullopt);
    j.field("tokens_per_joule",
            tokens && energy > 0 ? std::optional(*tokens / energy) : std::nullopt);
    j.field("samples", samples);
    j.field("joules_per_sample",
            samples && *samples > 0 ? std::optional(energy / *samples) : std::nullopt);
    j.field("samples_per_joule",
            samples && energy > 0 ? std::optional(*samples / energy) : std::nullopt);
    j.key("metrics").begin_object();
    for (const auto& m : l.metrics)
      j.field(m.name, m.value);
    j.end_object();
    j.key("gpus").begin_array();
    for (std::size_t d = 0; d < w.devices.size() && d < ctx_.devices.size(); ++d) {
      if (ctx_.devices[d].kind != device_kind::gpu) continue;  // in "components"
      const device_window& dw = w.devices[d];
      std::optional<double> e;
      if (dw.energy_uj) e = to_joules(*dw.energy_uj).value;
      j.begin_object();
      j.field("index", ctx_.devices[d].index).field("uuid", ctx_.devices[d].uuid);
      j.field("energy_j", e);
      if (step) j.field("energy_per_step_j", per_step[d]);
      j.field("avg_power_w", e && duration > 0 ? std::optional(*e / duration) : std::nullopt);
      j.field("peak_power_w", dw.peak_power_w);
      j.field("deviation", deviation[d]);
      j.end_object();
    }
    j.end_array();
    j.end_object();
    sink_->write(j.str());
  }

  predictor_.add_window(to_joules(all_uj_).value, w.end_t - monotonic_seconds(ctx_.start_mono),
                        step ? std::optional(l.step) : std::nullopt);
  if (step) predict(l);
  if (!step) return {};
  return fmt::format(" energy:{:.1f}J/step avg:{:.0f}W", energy / gap,
                     duration > 0 ? energy / duration : 0.0);
}

std::optional<prediction_target> wrap_report::target_of(const window_label& l) const {
  if (settings_.total_steps) return prediction_target{*settings_.total_steps, 0, true};
  if (!l.total || *l.total == 0) return std::nullopt;
  if (!l.epoch) return prediction_target{*l.total, 0, true};
  // A per-epoch counter: its total is the batches of one epoch, and the step the global batch
  // count.  The whole run is the epochs times that, when the log says how many epochs there are;
  // else only the epoch under way can be predicted.
  const std::uint64_t per_epoch = *l.total;
  if (l.epochs && *l.epochs > *l.epoch) return prediction_target{*l.epochs * per_epoch, 0, true};
  return prediction_target{(*l.epoch + 1) * per_epoch, *l.epoch * per_epoch, false};
}

void wrap_report::predict(const window_label& l) {
  const auto target = target_of(l);
  const auto p = predictor_.due(target);
  if (!p) return;
  last_prediction_ = p;
  const auto finish = std::chrono::system_clock::now() +
                      std::chrono::duration_cast<std::chrono::system_clock::duration>(
                          std::chrono::duration<double>(p->remaining_s));
  std::string when = iso8601_utc(finish).substr(0, 16);  // 2026-11-23T20:37
  if (when.size() > 10) when[10] = ' ';
  const bool per_epoch = l.epoch && !settings_.total_steps;
  std::string where = fmt::format("step {}/{}", p->at_step, p->total_steps);
  if (per_epoch) {
    where += l.epochs ? fmt::format(" (epoch {} of {})", *l.epoch + 1, *l.epochs)
                      : fmt::format(" (epoch {})", *l.epoch + 1);
  }
  if (p->milestone_percent > 0) where += fmt::format(" ({}%)", p->milestone_percent);
  const std::string what =
      p->whole_run ? "the whole run"
                   : fmt::format("to the end of epoch {} (the number of epochs is not in the log)",
                                 *l.epoch + 1);
  notice_(fmt::format("prediction at {}: {} {}, {} in all, finishing about {} UTC ({} per step "
                      "over {} steps)",
                      where, what, format_energy(p->energy_j), format_duration(p->duration_s), when,
                      format_joules(p->energy_per_step_j), p->basis_steps) +
          prediction_carbon_text(carbon::assess(ctx_.carbon, p->energy_j)));
  if (sink_) {
    json_writer j;
    j.begin_object();
    common_record_fields(j, "prediction", ctx_);
    j.field("at_step", p->at_step).field("total_steps", p->total_steps);
    j.field("scope", p->whole_run ? "run" : "epoch");
    j.field("epoch", per_epoch ? std::optional(*l.epoch + 1) : std::nullopt);
    j.field("epochs", per_epoch ? l.epochs : std::nullopt);
    j.field("steps_per_epoch", per_epoch ? l.total : std::nullopt);
    j.field("milestone_percent", p->milestone_percent);
    j.field("energy_j", p->energy_j).field("energy_wh", p->energy_j / kJoulesPerWattHour);
    j.field("duration_s", p->duration_s).field("remaining_s", p->remaining_s);
    j.field("finish_time", iso8601_utc(finish));
    j.field("energy_per_step_j", p->energy_per_step_j)
        .field("duration_per_step_s", p->duration_per_step_s);
    j.field("basis_steps", p->basis_steps);
    j.key("carbon");
    carbon::write_json(j, carbon::assess(ctx_.carbon, p->energy_j));
    j.end_object();
    sink_->write(j.str());
  }
}

std::string wrap_report::session_json(microjoules run_total_uj) const {
  json_writer j;
  j.begin_object();
  j.field("step_windows", step_windows_).field("steps", steps_counted_);
  j.field("last_step", step_windows_ > 0 ? std::optional(last_step_) : std::nullopt);
  j.field("total_steps", settings_.total_steps ? settings_.total_steps : last_total_);
  j.field("energy_per_step_j",
          steps_counted_ > 0
              ? std::optional(to_joules(steps_uj_).value / static_cast<double>(steps_counted_))
              : std::nullopt);
  // Tokens and samples where the step lines (or --tokens-per-step, --samples-per-step) give
  // them; the rates over the energy of those windows.
  const double tokens_j = to_joules(tokens_uj_).value;
  const double samples_j = to_joules(samples_uj_).value;
  j.field("tokens", tokens_ > 0 ? std::optional(tokens_) : std::nullopt);
  j.field("joules_per_token", tokens_ > 0 ? std::optional(tokens_j / tokens_) : std::nullopt);
  j.field("tokens_per_joule",
          tokens_ > 0 && tokens_j > 0 ? std::optional(tokens_ / tokens_j) : std::nullopt);
  j.field("samples", samples_ > 0 ? std::optional(samples_) : std::nullopt);
  j.field("joules_per_sample", samples_ > 0 ? std::optional(samples_j / samples_) : std::nullopt);
  j.field("samples_per_joule",
          samples_ > 0 && samples_j > 0 ? std::optional(samples_ / samples_j) : std::nullopt);
  j.key("energy_by_window_j").begin_object();
  j.field("setup", to_joules(setup_uj_).value).field("steps", to_joules(steps_uj_).value);
  j.key("phases").begin_object();
  for (const auto& [name, uj] : phases_uj_)
    j.field(name, to_joules(uj).value);
  j.end_object();
  j.field("other", to_joules(other_uj_).value).field("tail", to_joules(tail_uj_).value);
  j.end_object();
  j.field("windows", windows_);
  // The parts are integers of microjoules: their sum is the total exactly, or something is lost.
  j.field("windows_sum_j", to_joules(all_uj_).value);
  j.field("conserved", all_uj_ == run_total_uj);
  j.key("stragglers").begin_array();
  for (const auto& e : straggler_events_) {
    j.begin_object().field("gpu", ctx_.devices[e.device].index).field("deviation", e.deviation);
    j.field("at_step", e.at_step).end_object();
  }
  j.end_array();
  j.end_object();
  return j.take();
}

std::vector<summary_part> wrap_report::summary() const {
  if (step_windows_ == 0) {
    return {{"steps", "no step lines recognised (check the log with joules steps)", ""}};
  }
  std::string s =
      fmt::format("{} steps, {}/step", steps_counted_,
                  format_joules(to_joules(steps_uj_).value / static_cast<double>(steps_counted_)));
  s += fmt::format(" (setup {}", format_joules(to_joules(setup_uj_).value));
  for (const auto& [name, uj] : phases_uj_)
    s += fmt::format(", {} {}", name, format_joules(to_joules(uj).value));
  if (other_uj_ > 0) s += fmt::format(", other {}", format_joules(to_joules(other_uj_).value));
  s += fmt::format(", tail {})", format_joules(to_joules(tail_uj_).value));
  if (tokens_ > 0) s += fmt::format(", {:.3g} J/token", to_joules(tokens_uj_).value / tokens_);
  if (samples_ > 0) {
    s += fmt::format(", {:.3g} J/sample", to_joules(samples_uj_).value / samples_);
  }
  // Every joule is in one window; the block says in words what "other" holds.
  std::string note;
  if (other_uj_ > 0) {
    note =
        "other: between a step line and a phase (evaluation, checkpoint) that began before the "
        "next step line, such as data loading or logging";
  }
  return {{"steps", s, note}};
}

}  // namespace joules
