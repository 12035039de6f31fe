// `joules monitor`: a live view of every GPU's power, energy and health.  Everything it shows
// comes from sampler snapshots: the sampler thread is the only one that reads the hardware
// (DESIGN.md), the main thread renders and waits for keys, resizes and signals.

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "cli/commands.hpp"
#include "cli/energy_options.hpp"
#include "cli/measure.hpp"
#include "devices/device_scope.hpp"
#include "monitor/live.hpp"
#include "monitor/terminal.hpp"
#include "monitor/view.hpp"
#include "sampler/sampler.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

namespace joules::cli {
namespace {

constexpr std::string_view kView = "View";
constexpr std::chrono::milliseconds kDefaultInterval{500};
// Frames are drawn this long after the sampler's tick of the same slot, so that the tick and
// its health readings are in the snapshot.
constexpr std::chrono::milliseconds kFrameLag{40};
// How long quitting waits for the sampler thread; one stuck in a driver call is left behind.
constexpr std::chrono::milliseconds kStopGrace{300};

const std::vector<option_spec>& monitor_options() {
  static const std::vector<option_spec> options = [] {
    std::vector<option_spec> o = {
        {"interval", 0, "MS",
         "Milliseconds between refreshes, 10 to 60000. Power, energy and health are read once per "
         "interval, on a fixed schedule (no drift).",
         "500", false, kView},
        {"once", 0, "", "Print one snapshot, taken one interval after start, and exit.", "", false,
         kView},
        {"json", 0, "",
         "Print one JSON object per interval (JSONL: every device's power, energy and health) "
         "instead of the view.",
         "", false, kView},
        {"plain", 0, "",
         "Print one plain line per device per interval, as when the output is not a terminal "
         "(like nvidia-smi dmon).",
         "", false, kView},
    };
    for (const auto& m : measure_options()) {
      if (m.name == "gpus") o.push_back(m);
    }
    for (const auto& b : backend_option_specs())
      o.push_back(b);
    for (auto c : component_option_specs()) {
      if (c.name == "components") {
        c.default_text =
            "gpu, plus cpu and dram where RAPL can be read (counters that cannot be read are "
            "named on stderr, with the fix)";
      }
      o.push_back(c);
    }
    o.push_back({"help", 'h', "", "Print this help and exit.", "", false, "Other"});
    return o;
  }();
  return options;
}

struct monitor_settings {
  backend_options backend;
  std::optional<std::string> gpus;
  std::chrono::milliseconds interval = kDefaultInterval;
  bool once = false;
  bool json = false;
  bool plain = false;
};

monitor_settings read_monitor_settings(const parsed_args& args) {
  monitor_settings s;
  if (auto v = args.get("interval")) {
    const auto ms = parse_uint(*v, 10, 60000);
    if (!ms) {
      throw usage_error(fmt::format(
          "--interval '{}': expected a whole number of milliseconds from 10 to 60000", *v));
    }
    s.interval = std::chrono::milliseconds(*ms);
  }
  s.gpus = args.get("gpus");
  if (s.gpus && trim(*s.gpus).empty()) {
    throw usage_error("--gpus '': expected all, or a comma-separated list of GPU indices or UUIDs");
  }
  s.once = args.has("once");
  s.json = args.has("json");
  s.plain = args.has("plain");
  if (s.json && s.plain) throw usage_error("--json and --plain both set: choose one");
  s.backend = read_backend_options(args);
  read_component_options(args, s.backend.components);
  return s;
}

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::optional<std::string>(v) : std::nullopt;
}

std::string host_name() {
  if (auto h = env("JOULES_HOSTNAME"); h && !h->empty()) return *h;
  std::array<char, 256> buf{};
  if (gethostname(buf.data(), buf.size() - 1) != 0) return "unknown";
  return buf.data();
}

void note(const std::string& text) {
  std::fprintf(stderr, "joules: note: %s\n", text.c_str());
}

enum class output_mode { screen, plain, json };

// The text of one snapshot in a stream mode (plain lines or one JSONL object).
std::string stream_text(const monitor::screen_model& m, output_mode mode) {
  const std::string time = iso8601_utc(std::chrono::system_clock::now());
  if (mode == output_mode::json) return monitor::json_sample(m, time);
  std::string out = monitor::plain_stale_line(m);
  for (const auto* list : {&m.gpus, &m.host_devices}) {
    for (const auto& d : *list)
      out += monitor::plain_line(time, m.readings_age_s, d);
  }
  return out;
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

int show_once(monitor::event_source& events, monitor::live_model& state, output_mode mode,
              std::chrono::milliseconds interval, bool color) {
  const auto lag = std::min(kFrameLag, interval / 4);
  const auto ev = events.wait(steady::now() + interval + lag);
  if (ev.what == monitor::event_source::kind::signal) return 128 + ev.signal;
  const auto& m = state.update();
  std::string out;
  if (mode == output_mode::screen) {
    out = once_screen(m, color);
  } else {
    out = (mode == output_mode::plain ? monitor::plain_header() : std::string()) +
          stream_text(m, mode);
  }
  monitor::write_stdout(out);
  return 0;
}

// The live view, or the stream of plain lines or JSONL, until q or a signal.  Returns the exit
// status; the terminal is restored when it returns (or throws).
int show_live(monitor::event_source& events, monitor::live_model& state, output_mode mode,
              std::chrono::milliseconds interval, bool color) {
  const mono_time start = steady::now();
  const auto lag = std::min(kFrameLag, interval / 4);
  std::optional<monitor::screen_session> screen;
  if (mode == output_mode::screen) screen.emplace();
  if (mode == output_mode::plain && !monitor::write_stdout(monitor::plain_header())) return 0;
  bool clear = true;
  monitor::terminal_size size = monitor::size_of_stdout();
  auto draw = [&] {
    screen->draw(monitor::render_screen(state.update(), size.columns, size.lines, color), clear);
    clear = false;
  };
  if (screen) draw();
  mono_time next = start + interval + lag;
  while (true) {
    const auto ev = events.wait(next);
    using kind = monitor::event_source::kind;
    switch (ev.what) {
      case kind::timeout: {
        if (screen) {
          draw();
        } else if (!monitor::write_stdout(stream_text(state.update(), mode))) {
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
      case kind::suspend_key:
        if (screen) {
          screen->suspend();
          size = monitor::size_of_stdout();
          clear = true;
          draw();
        }
        break;
      case kind::quit_key:
        return 0;
      case kind::signal:
        return 128 + ev.signal;
    }
  }
}

}  // namespace

const command_spec& monitor_spec() {
  static const command_spec spec{
      "monitor",
      "live power, energy and health of every GPU",
      "[OPTIONS]",
      "On a terminal, a full-screen view refreshed every --interval: one block per GPU with its "
      "power against its limit, the energy it used since the monitor started (from its energy "
      "counter where it has one), utilisation, SM and tensor activity (Hopper and newer), memory, "
      "temperatures, clocks, PCIe, the active clock-event (throttle) reasons, health flags and a "
      "sparkline of the last minute of power; the node's total power and energy; the processes "
      "on the GPUs. q (or Ctrl-C) quits, Ctrl-Z suspends; the terminal is restored on every way "
      "out, signals included. A taller terminal shows more per GPU. When the driver stops "
      "answering, a line says how old the readings are; quitting does not wait for it.\n"
      "When the output is not a terminal (or with --plain), one line per device per interval, "
      "like nvidia-smi dmon: time, age of the readings (s), device, power and limit (W), energy "
      "since start (J), utilisation, SM activity and memory bandwidth (%), temperatures (°C), "
      "clocks (MHz), PCIe generation and width, clock-event reasons and health findings; '-' "
      "marks what the device does not report, and a line starting with '#' says when the "
      "readings are stale. --json prints one JSON object per interval instead "
      "(docs/monitor-doctor.md).\n"
      "The GPUs shown are those this job may use (CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES), "
      "else all; CPU packages and DRAM are added where RAPL can be read. Exit status: 0 after q "
      "or --once, 128+N after signal N, 2 for bad options, 125 when nothing can be read.",
      monitor_options(),
      positional_kind::none,
      "joules monitor\n"
      "joules monitor --interval 1000 --gpus 0,1\n"
      "joules monitor --json > gpus.jsonl\n"
      "joules monitor --once --plain\n"
      "joules monitor --backend sim --sim-gpus 4"};
  return spec;
}

int monitor_main(const parsed_args& args) {
  const monitor_settings s = read_monitor_settings(args);
  sampler_options options;
  options.interval = s.interval;
  options.health_interval = s.interval;
  sampler readings([b = s.backend] { return open_backend(b); }, options);
  const backend& hw = readings.hardware();
  for (const auto& n : hw.notices())
    note(n);

  // The GPUs this job may use, as `run` chooses them; CPU and DRAM domains are the machine's.
  std::vector<device_info> gpus;
  std::vector<std::size_t> gpu_at;
  for (std::size_t i = 0; i < hw.devices().size(); ++i) {
    if (hw.devices()[i].kind != device_kind::gpu) continue;
    gpus.push_back(hw.devices()[i]);
    gpu_at.push_back(i);
  }
  std::vector<std::size_t> chosen;
  if (!gpus.empty()) {
    scope_request request;
    request.gpus = s.gpus;
    request.cuda_visible_devices = env("CUDA_VISIBLE_DEVICES");
    request.nvidia_visible_devices = env("NVIDIA_VISIBLE_DEVICES");
    const scope_result scope = select_devices(gpus, request, [&](std::string_view mig) {
      return readings.on_thread([&](backend& b) { return b.parent_of_mig(mig); });
    });
    for (const auto& n : scope.notes)
      note(n);
    for (std::size_t k : scope.devices)
      chosen.push_back(gpu_at[k]);
  }
  for (std::size_t i = 0; i < hw.devices().size(); ++i) {
    if (hw.devices()[i].kind != device_kind::gpu) chosen.push_back(i);
  }
  for (const auto& c : hw.components()) {
    if (!c.fix.empty() && c.method == energy_method::none) {
      note(fmt::format("{} power is not shown: {}; {}", to_string(c.kind), c.detail, c.fix));
    }
  }
  if (chosen.empty()) throw fatal_error("no device to monitor");

  const bool tty = isatty(STDOUT_FILENO) != 0;
  output_mode mode = output_mode::screen;
  if (s.json) {
    mode = output_mode::json;
  } else if (s.plain || !tty) {
    mode = output_mode::plain;
  }
  const char* no_color = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  const bool color = tty && (no_color == nullptr || no_color[0] == '\0') &&
                     !(term != nullptr && std::string_view(term) == "dumb");

  // Signals end the loop (they are read from a signalfd, never delivered): set up before start.
  const bool keys = mode == output_mode::screen && !s.once && isatty(STDIN_FILENO) != 0;
  monitor::event_source events(keys);
  readings.start(chosen);
  monitor::live_model state(readings, chosen, s.interval, keys, host_name());
  state.wait_for_health();
  const int status = s.once ? show_once(events, state, mode, s.interval, color)
                            : show_live(events, state, mode, s.interval, color);
  // The terminal is back already (show_live's screen_session is gone).  A sampler stuck in a
  // driver call that does not return is left behind, as `run` does: the process ends without
  // the destructors that would wait for it.
  if (!readings.stop(kStopGrace)) {
    std::fflush(nullptr);
    std::_Exit(status);
  }
  return status;
}

}  // namespace joules::cli
