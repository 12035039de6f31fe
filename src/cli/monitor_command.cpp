// `joules monitor`: live power, energy and health of every GPU.

#include <cstdint>

#include "cli/commands.hpp"
#include "cli/shared_options.hpp"
#include "session/monitor.hpp"

namespace joules::cli {
namespace {

constexpr options::command_text kMonitorText{
    "monitor", "live power, energy and health of every GPU", "[OPTIONS]",
    "On a terminal, a full-screen view refreshed every --interval: one block per GPU with its "
    "power against its limit, the energy it used since the monitor started (from its energy "
    "counter where it has one), utilisation, SM and tensor activity (Hopper and newer), memory, "
    "temperatures, clocks, PCIe, the active clock-event (throttle) reasons, health flags and a "
    "sparkline of the last minute of power; the node's total power and energy; the processes on "
    "the GPUs. Keys: ? help, q (or Ctrl-C) quits, Ctrl-Z suspends, v the next view (processes "
    "with their share of each GPU's energy, graphs of the last 5 minutes), s sorts by index, "
    "power, utilisation, memory or temperature, r reverses, p (or space) pauses the screen while "
    "readings go on, the arrows or 1-9 show one GPU in detail, Esc or 0 all again. The terminal "
    "is restored on every way out, signals included. A taller terminal shows more per GPU. When "
    "the driver stops answering, a line says how old the readings are; quitting does not wait "
    "for it.\n"
    "When the output is not a terminal, TERM is dumb, or with --plain: one line per device per "
    "interval, "
    "like nvidia-smi dmon: time, age of the readings (s), device, power (the energy counter's "
    "rate where the device has no power reading, as Level Zero's GPUs) and limit (W), energy "
    "since start (J), utilisation, SM activity and memory bandwidth (%), temperatures (°C), "
    "clocks (MHz), PCIe generation and width, clock-event reasons and health findings; '-' marks "
    "what the device does not report, and a line starting with '#' says when the readings are "
    "stale. --json prints one JSON object per interval instead (docs/monitor-doctor.md).\n"
    "The GPUs shown are those this job may use (each vendor's visibility variables, as for "
    "--gpus), else all; CPU packages and DRAM are added where RAPL can be read. Exit status: 0 "
    "after q or "
    "--once, 128+N after signal N, 2 for bad options, 125 when nothing can be read.",
    "joules monitor\n"
    "joules monitor --interval 1000 --gpus 0,1\n"
    "joules monitor --json > gpus.jsonl\n"
    "joules monitor --output gpus.jsonl --output-max-size 100000000 --output-keep 5\n"
    "joules monitor --once --plain\n"
    "joules monitor --backend sim --sim-gpus 4"};

class monitor_command final : public options::command {
 public:
  const options::command_text& text() const override { return kMonitorText; }
  void declare(options::option_table& t) override {
    t.group("View");
    t.millis("interval",
             "Milliseconds between refreshes. Power, energy and health are read once per "
             "interval, on a fixed schedule (no drift).",
             "500", 10, 60000, s_.interval);
    t.flag("once", 0, "Print one snapshot, taken one interval after start, and exit.", s_.once);
    CLI::Option* json = t.flag("json", 0,
                               "Print one JSON object per interval (JSONL: every device's power, "
                               "energy and health) instead of the view.",
                               s_.json);
    CLI::Option* plain = t.flag("plain", 0,
                                "Print one plain line per device per interval, as when the output "
                                "is not a terminal (like nvidia-smi dmon).",
                                s_.plain);
    t.excludes(json, plain);
    CLI::Option* output = declare_rotated_output(
        t, "Write the JSONL (as --json) to FILE instead of stdout; FILE is truncated first.",
        s_.output, s_.output_max_bytes, s_.output_keep);
    t.excludes(output, plain);
    declare_gpus(t, s_.gpus);
    declare_backend(t, s_.backend);
    declare_sim(t, s_.backend);
    declare_components(t, s_.backend.components,
                       "gpu, plus cpu and dram where RAPL can be read; counters that cannot be "
                       "read are named on stderr, with the fix");
    declare_tokens(t, s_.inference, "monitor");
  }
  int run(std::vector<std::string>) override { return session::show_monitor(s_); }

 private:
  session::monitor_settings s_;
};

}  // namespace

std::unique_ptr<options::command> make_monitor_command() {
  return std::make_unique<monitor_command>();
}

}  // namespace joules::cli
