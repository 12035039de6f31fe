#pragma once
// What `joules monitor` shows, and the three ways it shows it: the full-screen view (a terminal),
// one plain line per device per interval (a pipe, like `nvidia-smi dmon`), and JSONL samples
// (--json).  Pure: the model is filled from sampler snapshots by live.cpp and rendered here into
// strings, so the screen can be unit-tested (and its frames kept as golden files) without a
// terminal.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.hpp"
#include "monitor/history.hpp"
#include "monitor/keys.hpp"
#include "sampler/sampler.hpp"

namespace joules::monitor {

struct process_row {
  unsigned gpu = 0;  // NVML index of the GPU it runs on
  unsigned pid = 0;
  std::string user;     // empty: unknown (another pid namespace, or gone)
  std::string command;  // empty: unknown
  std::optional<std::uint64_t> memory_bytes;
  bool graphics = false;
  // From NVML's per-process utilisation, where the GPU reports it (docs/monitor-doctor.md):
  // its SM utilisation, its share of the GPU's energy (0-1), that share of the GPU's power now,
  // and the energy it was given since the monitor first saw it.
  std::optional<double> sm_util_percent = {};
  std::optional<double> share = {};
  std::optional<double> power_w = {};
  std::optional<double> energy_j = {};
};

struct device_view {
  device_info info;
  sampler_snapshot::device now;            // power, energy since start, health, lost
  const history* power_history = nullptr;  // GPUs only
  const history* util_history = nullptr;   // GPUs only: utilisation, %
};

// An inference server whose tokens the session counts (--tokens-from, docs/inference.md), as
// the session hands it over: figures over the last minute.
struct inference_row {
  std::string source;   // "vllm serving m on GPUs 0,1": outside strings, escaped when shown
  std::string problem;  // why there are no counts now; empty while they come
  bool estimated = false;
  std::optional<double> energy_per_output_token_j;
  std::optional<double> output_tokens_per_s;
  std::optional<double> idle_energy_ratio;
  std::optional<double> power_w;
};

struct screen_model {
  std::string host;
  std::string source;  // "nvml, driver 570.86.15" / "sim: ..." (simulated)
  std::string clock;   // local wall-clock time, "12:04:05"
  double now_s = 0.0;  // monotonic seconds: the right edge of the sparklines and graphs
  double interval_s = 0.5;
  double elapsed_s = 0.0;  // since the monitor started
  bool keys = true;        // keys are read (stdin is a terminal): the footer lists them
  // Age of the readings shown (since the sampler published them), and whether that is too old
  // for the interval: the sampler is stuck in a driver call that does not return.
  std::optional<double> readings_age_s;
  bool stale = false;
  std::string readings_clock;  // local time of the readings shown, when stale: "12:03:51"
  std::vector<device_view> gpus;
  std::vector<device_view> host_devices;  // CPU packages and DRAM (RAPL), when measured
  std::vector<process_row> processes;     // of every GPU shown, by GPU then pid
  bool processes_known = false;           // some GPU reported its process list
  std::vector<inference_row> inference;   // --tokens-from
};

// The full-screen view: at most `height` lines, each at most `width` cells, with ANSI colours
// when `color`.  Shows one block per GPU, as detailed as the height allows (10 lines, 4, 3 or 1),
// in the order of m.gpus.
std::vector<std::string> render_screen(const screen_model& m, std::size_t width, std::size_t height,
                                       bool color);

// The live view as `ui` asks for it: the overview (its GPUs in ui's sort order), the processes
// or the graphs, or one GPU in detail; "paused" in the title while ui.paused; the keys on the
// last line when m.keys; the help overlay on top.  Exactly `height` lines or fewer.
std::vector<std::string> render_frame(const screen_model& m, const ui_state& ui, std::size_t width,
                                      std::size_t height, bool color);

// The order the GPUs of `m` are shown in (positions in m.gpus) under ui's sort: by index, or by
// power, utilisation, memory in use or temperature, highest first (ui.reverse: lowest first);
// unknown values last, ties by index.
std::vector<std::size_t> gpu_order(const screen_model& m, const ui_state& ui);

// Plain mode: the header (starts with '#'), then one line per device per interval; `age_s` is
// the age of the readings (screen_model::readings_age_s).  While the readings are stale, a
// comment line (starting with '#') says so before the devices' lines.
std::string plain_header();
std::string plain_line(std::string_view time, std::optional<double> age_s, const device_view& d);
std::string plain_stale_line(const screen_model& m);  // empty unless m.stale
// One comment line (starting with '#') per inference server, after the devices' lines.
std::string plain_inference_lines(const screen_model& m);
// "0.412 J/token · 1234 tok/s · idle 12 % · 830 W (1 min)", or the problem.
std::string inference_text(const inference_row& r);

// What to tell people about stale readings: "readings 8 s old: the driver is not answering".
std::string stale_text(const screen_model& m);

// --json: one JSONL sample with every device (schema in docs/monitor-doctor.md).
std::string json_sample(const screen_model& m, std::string_view iso_time);

// Formatting shared by the views (locale-independent): "-" for unknown.
std::string watts_text(std::optional<double> w);
std::string energy_text(std::optional<double> j);
std::string bytes_text(std::optional<std::uint64_t> b);           // binary units: "61.2 GiB"
std::string rate_text(std::optional<double> bytes_per_s);         // decimal units: "1.2 GB/s"
std::string duration_text(double s);                              // "1h02m", "3m05s", "42s"
std::string throttle_text(const std::optional<clock_events>& e);  // "power cap, idle" / "none"

// Cuts `line` to `width` visible cells (ANSI colour sequences take none), closing any colour.
std::string fit(std::string_view line, std::size_t width);
// Visible cells of `text`: code points outside ANSI colour sequences (every glyph used is one
// cell wide).
std::size_t cells(std::string_view text);

// `v` rounded to `decimals` decimal places, for machine output (W to mW, J to mJ): the JSON
// writer then prints the shortest form, 400.157 rather than 400.15700000000004.
std::optional<double> rounded(std::optional<double> v, int decimals);

}  // namespace joules::monitor
