#include "session/monitor.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "backends/composite/open_backend.hpp"
#include "monitor/live.hpp"
#include "monitor/terminal.hpp"
#include "monitor/view.hpp"
#include "record/jsonl_sink.hpp"
#include "sampler/sampler.hpp"
#include "session/device_choice.hpp"
#include "session/identity.hpp"
#include "session/inference_report.hpp"
#include "term/messages.hpp"
#include "term/terminal.hpp"
#include "util/error.hpp"

namespace joules::session {
namespace {

// Frames are drawn this long after the sampler's tick of the same slot, so that the tick and
// its health readings are in the snapshot.
constexpr std::chrono::milliseconds kFrameLag{40};
// How long quitting waits for the sampler thread; one stuck in a driver call is left behind.
constexpr std::chrono::milliseconds kStopGrace{300};
// How long `--once` waits beyond its interval for the second health readings.
constexpr std::chrono::seconds kOnceHealthWait{2};

enum class output_mode { screen, plain, json };

// The model of the latest snapshot with the inference servers' lines (--tokens-from).
struct frame_source {
  monitor::live_model& state;
  const inference_tracker* inference = nullptr;
  monitor::screen_model model;

  const monitor::screen_model& update() {
    model = state.update();
    if (inference == nullptr) return model;
    for (const auto& v : inference->board().read()) {
      if (v.id.estimated && v.server.empty()) continue;
      monitor::inference_row r;
      r.source = v.server.empty() ? v.id.endpoint : source_words(v);
      r.estimated = v.id.estimated;
      if (!v.up && !v.id.estimated)
        r.problem = v.last_error.empty() ? "not read yet" : v.last_error;
      r.energy_per_output_token_j = v.one_minute.energy_per_output_token_j();
      r.output_tokens_per_s = v.one_minute.output_tokens_per_s();
      r.idle_energy_ratio = v.one_minute.idle_energy_ratio();
      r.power_w = v.one_minute.avg_power_w();
      model.inference.push_back(std::move(r));
    }
    return model;
  }
};

// The text of one snapshot in a stream mode (plain lines or one JSONL object).
std::string stream_text(const monitor::screen_model& m, output_mode mode) {
  const std::string time = iso8601_utc(std::chrono::system_clock::now());
  if (mode == output_mode::json) return monitor::json_sample(m, time);
  std::string out = monitor::plain_stale_line(m);
  for (const auto* list : {&m.gpus, &m.host_devices}) {
    for (const auto& d : *list)
      out += monitor::plain_line(time, m.readings_age_s, d);
  }
  return out + monitor::plain_inference_lines(m);
}

// Writes a stream mode's text: to the --output file when there is one, else to stdout.  False
// when the reader of stdout went away.
bool emit(jsonl_sink* sink, const std::string& text) {
  if (!sink) return monitor::write_stdout(text);
  std::string_view record(text);
  while (!record.empty() && record.back() == '\n')
    record.remove_suffix(1);
  sink->write(record);
  return true;
}

std::string once_screen(const monitor::screen_model& m, bool color) {
  const monitor::terminal_size size = monitor::size_of_stdout();
  std::string out;
  for (const auto& line : monitor::render_screen(m, size.columns, 10000, color)) {
    out += line;
    out += '\n';
  }
  return out;
}

int show_once(monitor::event_source& events, frame_source& state, output_mode mode,
              std::chrono::milliseconds interval, bool color, jsonl_sink* sink) {
  const auto lag = std::min(kFrameLag, interval / 4);
  const auto ev = events.wait(steady::now() + interval + lag);
  if (ev.what == monitor::event_source::kind::signal) return 128 + ev.signal;
  // The snapshot has the second health readings, which rates (Level Zero's utilisation) need
  // and which a loaded machine may bring later than one interval.
  const mono_time until = steady::now() + kOnceHealthWait;
  while (!state.state.has_health_rounds(2) && steady::now() < until) {
    const auto more = events.wait(steady::now() + std::chrono::milliseconds(5));
    if (more.what == monitor::event_source::kind::signal) return 128 + more.signal;
  }
  const auto& m = state.update();
  std::string out;
  if (mode == output_mode::screen) {
    out = once_screen(m, color);
  } else {
    out = (mode == output_mode::plain ? monitor::plain_header() : std::string()) +
          stream_text(m, mode);
  }
  emit(mode == output_mode::json ? sink : nullptr, out);
  return 0;
}

// The NVML indices of the GPUs shown, in index order: what ← → and 1-9 step through.
std::vector<unsigned> gpu_indices(const monitor::screen_model& m) {
  std::vector<unsigned> out;
  for (const auto& d : m.gpus)
    out.push_back(d.info.index);
  std::sort(out.begin(), out.end());
  return out;
}

// The live view, or the stream of plain lines or JSONL, until q or a signal.  Returns the exit
// status; the terminal is restored when it returns (or throws).
int show_live(monitor::event_source& events, frame_source& state, output_mode mode,
              std::chrono::milliseconds interval, bool color, jsonl_sink* sink) {
  const mono_time start = steady::now();
  const auto lag = std::min(kFrameLag, interval / 4);
  std::optional<monitor::screen_session> screen;
  if (mode == output_mode::screen) screen.emplace();
  if (mode == output_mode::plain && !monitor::write_stdout(monitor::plain_header())) return 0;
  bool clear = true;
  monitor::terminal_size size = monitor::size_of_stdout();
  monitor::ui_state ui;
  // While paused, the screen shows this copy; readings (and the histories) go on underneath.
  std::optional<monitor::frozen_model> frozen;
  auto draw = [&] {
    const monitor::screen_model& live = state.update();
    const monitor::screen_model& shown = frozen ? frozen->model() : live;
    screen->draw(monitor::render_frame(shown, ui, size.columns, size.lines, color), clear);
    clear = false;
  };
  if (screen) draw();
  mono_time next = start + interval + lag;
  while (true) {
    auto ev = events.wait(next);
    using kind = monitor::event_source::kind;
    switch (ev.what) {
      case kind::timeout: {
        if (screen) {
          draw();
        } else if (!emit(sink, stream_text(state.update(), mode))) {
          return 0;  // the reader went away (a closed pipe)
        }
        // The next slot on the grid; a frame that overran skips the slots it missed.
        next += interval;
        const mono_time now = steady::now();
        while (next <= now)
          next += interval;
        break;
      }
      case kind::resize:
        if (screen) {
          size = monitor::size_of_stdout();
          clear = true;
          draw();
        }
        break;
      case kind::keys: {
        bool redraw = false;
        for (const auto& k : ev.keys) {
          const bool was_paused = ui.paused;
          switch (monitor::apply(ui, k, gpu_indices(state.update()))) {
            case monitor::key_effect::quit:
              return 0;
            case monitor::key_effect::suspend:
              if (screen) {
                screen->suspend();
                size = monitor::size_of_stdout();
                clear = true;
                redraw = true;
              }
              break;
            case monitor::key_effect::redraw:
              redraw = true;
              break;
            case monitor::key_effect::none:
              break;
          }
          if (ui.paused && !was_paused) frozen.emplace(state.update());
          if (!ui.paused) frozen.reset();
        }
        if (screen && redraw) draw();
        break;
      }
      case kind::signal:
        return 128 + ev.signal;
    }
  }
}

}  // namespace

int show_monitor(const monitor_settings& s) {
  sampler_options options;
  options.interval = s.interval;
  options.health_interval = s.interval;
  sampler readings([b = s.backend] { return open_backend(b); }, options);
  const backend& hw = readings.hardware();
  for (const auto& n : hw.notices())
    term::print_note(n);

  // The GPUs this job may use, as `run` chooses them; CPU and DRAM domains are the machine's.
  const device_choice choice = choose_devices(readings, s.gpus);
  for (const auto& n : choice.scope.notes)
    term::print_note(n);
  const std::vector<std::size_t>& chosen = choice.devices;
  for (const auto& c : hw.components()) {
    if (!c.fix.empty() && c.method == energy_method::none) {
      term::print_note(
          fmt::format("{} power is not shown: {}; {}", to_string(c.kind), c.detail, c.fix));
    }
  }
  if (chosen.empty()) throw fatal_error("no device to monitor");

  const term::capabilities out = term::of(STDOUT_FILENO);
  output_mode mode = output_mode::screen;
  std::optional<jsonl_sink> sink;
  if (s.output) {
    sink.emplace(jsonl_sink::open_file(*s.output, jsonl_sink::mode::truncate,
                                       {s.output_max_bytes, s.output_keep}));
  }
  if (s.json || s.output) {
    mode = output_mode::json;
  } else if (s.plain || !out.cursor) {
    // A pipe, a file, or TERM=dumb (a terminal that moves no cursor): one line per device.
    mode = output_mode::plain;
  }
  const bool color = out.color;

  // Signals end the loop (they are read from a signalfd, never delivered): set up before start.
  const bool keys = mode == output_mode::screen && !s.once && isatty(STDIN_FILENO) != 0;
  std::unique_ptr<inference_tracker> inference;
  if (s.inference.any()) {
    std::vector<device_info> shown;
    for (std::size_t i : chosen)
      shown.push_back(hw.devices()[i]);
    inference_tracker::hooks h;
    // On the full screen, the servers' state is on their lines; elsewhere it is said on stderr.
    if (mode != output_mode::screen) {
      h.notice = [](const std::string& line) { term::print_note(line); };
    }
    inference = std::make_unique<inference_tracker>(s.inference, readings, shown, nullptr, h);
  }
  monitor::event_source events(keys);
  readings.start(chosen);
  if (inference) inference->start(steady::now());
  monitor::live_model state(readings, chosen, s.interval, keys, host_name());
  state.wait_for_health();
  frame_source frames{state, inference.get(), {}};
  jsonl_sink* to = sink ? &*sink : nullptr;
  const int status = s.once ? show_once(events, frames, mode, s.interval, color, to)
                            : show_live(events, frames, mode, s.interval, color, to);
  // The terminal is back already (show_live's screen_session is gone).  A sampler stuck in a
  // driver call that does not return is left behind, as `run` does: the process ends without
  // the destructors that would wait for it.
  if (!readings.stop(kStopGrace)) {
    std::fflush(nullptr);
    std::_Exit(status);
  }
  return status;
}

}  // namespace joules::session
