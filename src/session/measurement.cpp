#include "session/measurement.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "carbon/carbon.hpp"
#include "proc/child.hpp"
#include "session/device_choice.hpp"
#include "session/identity.hpp"
#include "term/messages.hpp"
#include "term/terminal.hpp"
#include "text/escape.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

namespace joules::session {
namespace {

// The most often sample records ask the sampler for health readings.
constexpr std::chrono::milliseconds kHealthInterval{5000};

}  // namespace

measurement::measurement(const measure_settings& settings, std::string subcommand,
                         const device_check& check)
    : settings_(settings) {
  if (!settings.command.empty()) child_process::resolve_command(settings.command.front());
  sampler_options options;
  options.interval = settings.interval;
  // Sample records carry utilisation, temperature and clocks: the sampler then reads them too,
  // after a tick.  A health reading is dozens of driver calls per GPU, milliseconds on a node
  // of 8 during which no step boundary is read: every 5 s keeps that to a rare boundary.
  if (settings.samples_interval) {
    options.health_interval = std::max(*settings.samples_interval, kHealthInterval);
  }
  // The sampler's thread opens the backend: only that thread ever calls the driver.
  sampler_ = std::make_unique<joules::sampler>([b = settings.backend] { return open_backend(b); },
                                               options);
  const backend& hw = sampler_->hardware();
  for (const auto& n : hw.notices())
    term::print_note(n);

  device_choice choice;
  if (settings.backend.components.gpu) {
    choice = choose_devices(*sampler_, settings.gpus);
  } else {
    choice.scope.source = "--components";
    choice.scope.value = "no gpu";
    choice.devices = choose_devices(*sampler_, std::nullopt).devices;
  }
  scope_result& scope = choice.scope;
  for (const auto& n : scope.notes)
    term::print_note(n);
  for (const auto& c : hw.components()) {
    // Unreadable counters get their fix said once, before the run; absent ones only in the
    // summary and the records (a VM has no RAPL, and that is no news on every run).
    if (!c.fix.empty() && c.method == energy_method::none) {
      term::print_note(fmt::format("{} energy is not measured: {}; {}",
                                   c.kind == device_kind::cpu ? "CPU" : "DRAM", c.detail, c.fix));
    }
  }

  // The chosen GPUs that can be measured, then every CPU and DRAM domain.
  for (std::size_t i : choice.devices) {
    const device_info& d = hw.devices()[i];
    if (d.kind == device_kind::gpu && !d.unreadable.empty()) {
      // Listed, and lost from the first moment in the records and the summary.
      term::print_note(fmt::format("{} is lost: {}; its energy is unknown", gpu_name(d),
                                   text::escape_for_terminal(d.unreadable)));
      measured_.push_back(i);
      continue;
    }
    if (d.kind == device_kind::gpu && d.method() == energy_method::none) {
      term::print_note(
          fmt::format("{} ({}) has neither an energy counter nor a power reading; it is not "
                      "measured (to estimate it, use --backend sim with its model)",
                      gpu_name(d), d.name));
      continue;
    }
    measured_.push_back(i);
  }
  const bool any_gpu = std::any_of(measured_.begin(), measured_.end(), [&](std::size_t i) {
    return hw.devices()[i].kind == device_kind::gpu && hw.devices()[i].unreadable.empty();
  });
  if (!any_gpu && settings.backend.components.gpu) {
    throw fatal_error(
        "none of the chosen GPUs can be measured (no energy counter, no power reading); to "
        "estimate them, use --backend sim with their model");
  }

  ctx_.subcommand = std::move(subcommand);
  ctx_.run_id = settings.run_id;
  ctx_.hostname = host_name();
  ctx_.labels = settings.labels;
  ctx_.command = settings.command;
  ctx_.backend = hw.meta();
  for (std::size_t i : measured_)
    ctx_.devices.push_back(hw.devices()[i]);
  ctx_.scope = std::move(scope);
  ctx_.notices = hw.notices();
  ctx_.interval_ms = static_cast<double>(settings.interval.count());
  ctx_.user = user_name();
  if (settings.samples_interval) {
    ctx_.samples_interval_ms = static_cast<double>(settings.samples_interval->count());
  }
  ctx_.components = hw.components();
  ctx_.carbon = settings.carbon;

  if (settings.inference.any()) {
    // Checks every @gpus= against the devices read, before anything is truncated or started.
    inference_tracker::hooks h;
    h.notice = [](const std::string& line) { term::print_note(line); };
    h.record = [this](const std::string& record) {
      if (sink_) sink_->write(record);
    };
    inference_ = std::make_unique<inference_tracker>(settings.inference, *sampler_, ctx_.devices,
                                                     &ctx_, std::move(h));
  }

  std::vector<bool> is_gpu;
  for (const auto& d : ctx_.devices)
    is_gpu.push_back(d.kind == device_kind::gpu);
  live_ = std::make_unique<exporter::run_metrics>(std::move(is_gpu));
  if (settings.exports.any()) {
    // Binds the port and resolves the collector now: a port in use is reported before any file
    // is truncated or the command started.
    exporters_ = std::make_unique<exporters>(
        settings.exports,
        exporter::run_source(
            {sampler_.get(), live_.get(), ctx_.devices, ctx_.backend, ctx_.subcommand,
             std::max(5.0, 3.0 * ctx_.interval_ms / 1000.0), ctx_.carbon,
             inference_ ? &inference_->board() : nullptr,
             exporter::component_states(
                 settings.backend.components, hw.components(),
                 static_cast<std::size_t>(std::count_if(
                     ctx_.devices.begin(), ctx_.devices.end(),
                     [](const device_info& d) { return d.kind == device_kind::gpu; })),
                 exporter::gpus_simulated(ctx_.devices))}),
        ctx_);
  }

  if (check) check(*sampler_, measured_);
  // Last, because it truncates: every other input error has been reported by now.
  if (settings.output) {
    sink_.emplace(jsonl_sink::open_file(
        *settings.output, settings.append ? jsonl_sink::mode::append : jsonl_sink::mode::truncate));
  } else if (settings.json) {
    sink_.emplace(jsonl_sink::adopt_fd(STDERR_FILENO, "stderr"));
  }
}

measurement::~measurement() = default;

void measurement::start() {
  // The exporters first: the child starts right after the sampler's first reading, and the
  // run's live energy counts from that reading.
  if (exporters_) exporters_->start();
  // A GPU without an energy counter is measured by integrating its power, whose sensor updates
  // every 20 ms on Pascal (measured: docs/nvml-notes.md §3.3): a reading every 100 ms would see
  // one update in five, and the total would be off by the sampling error.  Unless the user chose an
  // interval, such GPUs are read at the sensor's rate.
  if (!settings_.interval_given && settings_.interval > kPolledInterval) {
    const auto& all = sampler_->hardware().devices();
    const bool polled = std::any_of(measured_.begin(), measured_.end(), [&](std::size_t i) {
      const device_info& d = all[i];
      return d.kind == device_kind::gpu && d.method() == energy_method::polled && !d.power_window;
    });
    if (polled) {
      sampler_->set_interval(kPolledInterval);
      ctx_.interval_ms = static_cast<double>(kPolledInterval.count());
      term::print_note(
          fmt::format("reading every {} ms: a GPU without an energy counter is measured from its "
                      "power, which changes that often (--interval sets another pace)",
                      kPolledInterval.count()));
    }
  }
  sampler_->start(measured_);
  // RAPL counters must be read before they can wrap twice: the sampler may have shortened the
  // interval (sampler::start), and the records say the interval in force.
  const double interval_ms = sampler_->interval_s() * 1000.0;
  if (interval_ms + 0.5 < ctx_.interval_ms) {
    term::print_note(
        fmt::format("--interval {:.0f} ms shortened to {:.0f} ms: the RAPL energy counters could "
                    "wrap twice between readings",
                    ctx_.interval_ms, interval_ms));
    ctx_.interval_ms = interval_ms;
  }
}

void measurement::print_summary(const run_outcome& out,
                                const std::vector<summary_part>& extra) const {
  // The tokens of inference servers go after the caller's parts, before the carbon.
  std::vector<summary_part> parts = extra;
  if (inference_) {
    for (auto& p : inference_->summary())
      parts.push_back(std::move(p));
  }
  const run_summary sum = summarise(ctx_, out, parts);
  const term::capabilities err = term::of(STDERR_FILENO);
  using form = measure_settings::summary_form;
  const bool block =
      settings_.summary == form::block || (settings_.summary == form::automatic && err.tty);
  const std::string text =
      block ? sum.block(std::clamp<std::size_t>(err.columns, 60, 160)) : sum.line() + "\n";
  // GPU names and labels are outside strings: each line shown escaped, in one write.
  std::string shown;
  for (const auto& line : split(std::string_view(text).substr(0, text.size() - 1), '\n'))
    shown += text::escape_for_terminal(line) + "\n";
  std::fputs(shown.c_str(), stderr);
}

std::vector<double> measurement::energy_at(mono_time t) const {
  // The latest snapshot is from the sampler's first readings, a few milliseconds from t: carry
  // its energy to t at the power it read.
  std::vector<double> out(ctx_.devices.size(), 0.0);
  const auto snap = sampler_->snapshot();
  if (!snap) return out;
  const double dt = seconds_between(snap->taken, t);
  for (std::size_t k = 0; k < out.size() && k < snap->devices.size(); ++k) {
    const auto& d = snap->devices[k];
    out[k] = std::max(0.0, d.energy_j.value_or(0.0) + d.power_w.value_or(0.0) * dt);
  }
  return out;
}

void measurement::begin(mono_time t) {
  ctx_.start_mono = t;
  ctx_.start_wall = std::chrono::system_clock::now();
  live_->set_started(t, energy_at(t));
  sampler_->boundary(t);
  if (!sink_) ctx_.samples_interval_ms.reset();
  if (sink_) sink_->write(session_start_record(ctx_));
  if (sink_ && ctx_.samples_interval_ms) {
    samples_ =
        std::make_unique<sample_writer>(*sampler_, ctx_, *sink_, *settings_.samples_interval);
    samples_->start();
  }
  if (inference_) inference_->start(t);
}

std::vector<window_result> measurement::end(mono_time t) {
  // From here the snapshots read past the command's end: the exporters hold their energy.
  live_->command_ended();
  // The last scrapes read the energy from snapshots: before the sampler stops.
  if (inference_) inference_->finish(t);
  auto windows = sampler_->finish(t);
  // The last bucket after the last readings; before session_end, which closes the records.
  if (samples_) samples_->finish(t);
  return windows;
}

void measurement::drop_samples(std::string_view why) {
  if (settings_.samples_interval && !settings_.samples_default) {
    term::print_note(fmt::format("no sample records: {}", why));
  }
  ctx_.samples_interval_ms.reset();
}

void measurement::add_window(const window_result& w) {
  live_->add_window(w);
  if (!run_) {
    run_ = w;
    return;
  }
  join_window(*run_, w);
}

int measurement::finish(const interval_end& end, const std::string& extra_json,
                        const std::vector<summary_part>& summary_extra) {
  run_outcome out;
  out.end_mono = end.time;
  out.end_wall = std::chrono::system_clock::now();
  out.exit_status = end.exit_status;
  out.exit_code = end.exit_code;
  out.exit_signal = end.exit_signal;
  out.forwarded_signal = end.forwarded_signal;
  out.sampler_abandoned = sampler_->abandoned();
  out.extra_json = extra_json;
  out.sections = sections_;
  if (run_) {
    out.window = *run_;
  } else {
    out.window.devices.resize(ctx_.devices.size());
  }
  const double start = monotonic_seconds(ctx_.start_mono);
  for (std::size_t k = 0; k < ctx_.devices.size(); ++k) {
    const device_timeline& tl = sampler_->accounts().timeline(k);
    device_outcome d;
    d.counter_resets = tl.counter_resets();
    d.counter_wraps = tl.counter_wraps();
    d.reset_estimated_j = tl.reset_estimated_j();
    d.read_errors = tl.read_errors();
    d.last_error_code = tl.last_error_code();
    // A GPU lost before the start is lost from it (0 s), not before it.
    if (tl.lost_at() && *tl.lost_at() < monotonic_seconds(out.end_mono))
      d.lost_at_s = std::max(0.0, *tl.lost_at() - start);
    if (tl.counter_lost_at()) d.counter_lost_at_s = std::max(0.0, *tl.counter_lost_at() - start);
    if (tl.silent_at() && *tl.silent_at() < monotonic_seconds(out.end_mono))
      d.silent_at_s = std::max(0.0, *tl.silent_at() - start);
    out.devices.push_back(d);
  }
  live_->finish(seconds_between(ctx_.start_mono, out.end_mono));
  if (exporters_) {
    // The last OTLP push carries the run's final totals; then /metrics closes.
    exporters_->finish();
    out.exporters_json = exporters_->report_json();
  }
  if (sink_) {
    out.records_lost = sink_->failed_writes();
    sink_->write(session_end_record(ctx_, out));
  }
  if (!settings_.quiet && !settings_.json) print_summary(out, summary_extra);
  if (exporters_) {
    if (const std::string lost = exporters_->loss_line(); !lost.empty())
      std::fprintf(stderr, "%s\n", lost.c_str());
  }
  must_exit_hard_ = out.sampler_abandoned;
  return out.exit_status;
}

}  // namespace joules::session
