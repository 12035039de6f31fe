#include "cli/measure.hpp"

#include <fmt/format.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>

#include "backends/sim/sim_backend.hpp"
#include "cli/energy_options.hpp"
#include "devices/device_scope.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

namespace joules::cli {
namespace {

constexpr std::string_view kMeasurement = "Measurement";
constexpr std::string_view kOutput = "Output";
constexpr std::string_view kSim = "Simulated GPUs (--backend sim)";
constexpr std::string_view kExport = "Live metrics";

// The pace at which GPUs without an energy counter are read by default (their power sensor's
// update period on Pascal and Volta).
constexpr std::chrono::milliseconds kPolledInterval{20};

// Label names joules sets itself; a user label may not take them (they would be ambiguous in
// Prometheus and in joined JSONL).
constexpr std::array kReservedLabels = {"run_id",    "hostname",   "gpu",     "uuid",
                                        "model",     "pci_bus_id", "method",  "phase",
                                        "component", "job",        "instance"};

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::optional<std::string>(v) : std::nullopt;
}

bool valid_label_key(std::string_view k) {
  if (k.empty() || k.size() > 64 || std::isdigit(static_cast<unsigned char>(k[0])) != 0)
    return false;
  return std::all_of(k.begin(), k.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
  });
}

bool valid_run_id(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  return std::all_of(id.begin(), id.end(), [](char c) { return c > ' ' && c < 127; });
}

std::string random_run_id() {
  std::array<unsigned char, 6> bytes{};
  if (getrandom(bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) {
    // No entropy source: the pid and the clock still make a practically unique id.
    const auto t = static_cast<unsigned long long>(steady::now().time_since_epoch().count());
    return fmt::format("{:06x}{:06x}", static_cast<unsigned>(getpid()) & 0xffffffU,
                       t & 0xffffffULL);
  }
  std::string id;
  for (unsigned char b : bytes)
    id += fmt::format("{:02x}", b);
  return id;
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

// The CPU, DRAM, carbon and cost options (cli/energy_options.hpp), inserted before --help.
std::vector<option_spec> with_energy_options(std::vector<option_spec> o) {
  const option_spec help = o.back();
  o.pop_back();
  o.insert(o.end(), component_option_specs().begin(), component_option_specs().end());
  o.insert(o.end(), carbon_option_specs().begin(), carbon_option_specs().end());
  o.push_back(help);
  return o;
}

}  // namespace

const std::vector<option_spec>& measure_options() {
  static const std::vector<option_spec> options = with_energy_options({
      {"gpus", 0, "LIST",
       "GPUs to measure: all, or a comma-separated list of indices (as nvidia-smi numbers them), "
       "UUIDs (GPU-...), MIG UUIDs (their GPU is measured) or PCI bus ids.",
       "the GPUs this job may use: CUDA_VISIBLE_DEVICES, else NVIDIA_VISIBLE_DEVICES, else all",
       false, kMeasurement},
      {"interval", 0, "MS",
       "Milliseconds between readings of every GPU, 1 to 60000. Energy comes from each GPU's "
       "energy "
       "counter where it has one, so the interval mostly sets the resolution of peak power and of "
       "GPUs measured by polling power.",
       "100; 20 when a GPU has no energy counter", false, kMeasurement},
      {"backend", 0, "NAME",
       "Where readings come from: auto (NVML; fails with a clear message when there is no GPU), "
       "nvml, or sim (simulated GPUs, a documented model for trying joules without a GPU).",
       "auto", false, kMeasurement},
      {"nvml-library", 0, "PATH", "The NVML library to load.",
       "JOULES_NVML_LIBRARY, else libnvidia-ml.so.1 from the loader's search path", false,
       kMeasurement},
      {"output", 'o', "FILE",
       "Write JSONL records (docs/jsonl-schema.md) to FILE, or to stdout with -. FILE is checked "
       "before the command starts and truncated unless --append.",
       "", false, kOutput},
      {"append", 0, "", "Append to the --output file instead of truncating it.", "", false,
       kOutput},
      {"json", 0, "", "Write the JSONL records to stderr (instead of the summary line).", "", false,
       kOutput},
      {"quiet", 'q', "", "Do not print the summary line.", "", false, kOutput},
      {"label", 0, "KEY=VALUE",
       "Attach a label to the run's records. KEY is letters, digits and _, not starting with a "
       "digit.",
       "", true, kOutput},
      {"prometheus", 0, "[HOST:]PORT",
       "Serve the run's metrics at http://HOST:PORT/metrics while it runs (docs/metrics.md). HOST "
       "is 127.0.0.1 unless given; port 0 picks a free port. The address is printed on stderr.",
       "", false, kExport},
      {"otlp", 0, "URL",
       "Push the run's metrics to an OpenTelemetry collector over OTLP/HTTP with gzip-compressed "
       "JSON, e.g. http://127.0.0.1:4318 or https://otel.example.com (/v1/metrics is added when "
       "the URL has no path). Proxies come from https_proxy, http_proxy and no_proxy. A down or "
       "slow collector never holds up the command (joules waits at most 2 s for it at the end); "
       "429, 502, 503, 504 and lost connections are retried; batches not delivered are counted "
       "in session_end.",
       "", false, kExport},
      {"otlp-header", 0, "KEY=VALUE",
       "An HTTP header sent with every OTLP request, e.g. an API key; never printed.", "", true,
       kExport},
      {"otlp-interval", 0, "MS", "Milliseconds between OTLP pushes, 100 to 3600000.", "10000",
       false, kExport},
      {"otlp-ca-file", 0, "FILE",
       "Trust only the CA certificates in FILE (PEM) for an https:// --otlp collector.",
       "the system's CA store", false, kExport},
      {"otlp-client-cert", 0, "FILE",
       "Client certificate (PEM) for mutual TLS with an https:// --otlp collector; with "
       "--otlp-client-key.",
       "", false, kExport},
      {"otlp-client-key", 0, "FILE", "The unencrypted private key (PEM) of --otlp-client-cert.", "",
       false, kExport},
      {"run-id", 0, "ID",
       "Identifier on every record of the run; give every node of a multi-node run the same one.",
       "JOULES_RUN_ID, else SLURM_JOB_ID.SLURM_STEP_ID, else random", false, kOutput},
      {"sim-model", 0, "NAME",
       "Simulated GPU model: h100-sxm, h100-pcie, h200, gh200, b200, a100-sxm, a100-pcie, a10, "
       "l40s, l4, "
       "rtx4090, v100, t4; any other name with --sim-tdp.",
       "h100-sxm", false, kSim},
      {"sim-gpus", 0, "N", "Number of simulated GPUs, 1 to 1024.", "8", false, kSim},
      {"sim-profile", 0, "PROFILE",
       "Utilisation over time: train (start-up, then compute and communication phases), idle, or a "
       "constant utilisation between 0 and 1.",
       "train", false, kSim},
      {"sim-tdp", 0, "W", "Board power of the simulated GPU in watts.", "the model's", false, kSim},
      {"help", 'h', "", "Print this help and exit.", "", false, "Other"},
  });
  return options;
}

std::string resolve_run_id(const std::optional<std::string>& option) {
  if (option) return *option;
  if (auto id = env("JOULES_RUN_ID"); id && !id->empty()) return *id;
  if (auto job = env("SLURM_JOB_ID"); job && !job->empty()) {
    if (auto step = env("SLURM_STEP_ID"); step && !step->empty()) return *job + "." + *step;
    return *job;
  }
  return random_run_id();
}

backend_options read_backend_options(const parsed_args& args) {
  backend_options b;
  b.name = args.get("backend").value_or("auto");
  if (b.name != "auto" && b.name != "nvml" && b.name != "sim") {
    throw usage_error(fmt::format("--backend '{}': expected auto, nvml or sim", b.name));
  }
  if (auto lib = args.get("nvml-library")) b.nvml_library = *lib;
  for (const char* sim_option : {"sim-model", "sim-gpus", "sim-profile", "sim-tdp"}) {
    if (args.has(sim_option) && b.name != "sim") {
      throw usage_error(fmt::format("--{} applies only with --backend sim", sim_option));
    }
  }
  if (auto m = args.get("sim-model")) b.sim.model = *m;
  if (auto n = args.get("sim-gpus")) {
    const auto v = parse_uint(*n, 1, 1024);
    if (!v)
      throw usage_error(
          fmt::format("--sim-gpus '{}': expected a number of GPUs from 1 to 1024", *n));
    b.sim.gpus = static_cast<unsigned>(*v);
  }
  if (auto p = args.get("sim-profile")) {
    b.sim.profile = *p;
    [[maybe_unused]] const sim_profile check(*p);  // throws usage_error for a bad profile
  }
  if (auto w = args.get("sim-tdp")) {
    const auto v = parse_double(*w);
    if (!v || *v <= 0.0 || *v > 5000.0) {
      throw usage_error(
          fmt::format("--sim-tdp '{}': expected watts, more than 0 and at most 5000", *w));
    }
    b.sim.tdp_w = *v;
  }
  return b;
}

std::vector<option_spec> backend_option_specs() {
  std::vector<option_spec> out;
  for (const auto& o : measure_options()) {
    for (std::string_view name :
         {"backend", "nvml-library", "sim-model", "sim-gpus", "sim-profile", "sim-tdp"}) {
      if (o.name == name) out.push_back(o);
    }
  }
  return out;
}

measure_settings read_measure_settings(const parsed_args& args, std::string_view subcommand) {
  measure_settings s;
  s.command = args.positional();
  if (s.command.empty()) {
    throw usage_error(
        fmt::format("joules {} needs a command to run, e.g. joules {} -- python train.py",
                    subcommand, subcommand));
  }
  if (auto v = args.get("interval")) {
    const auto ms = parse_uint(*v, 1, 60000);
    if (!ms) {
      throw usage_error(fmt::format(
          "--interval '{}': expected a whole number of milliseconds from 1 to 60000", *v));
    }
    s.interval = std::chrono::milliseconds(*ms);
    s.interval_given = true;
  }
  s.gpus = args.get("gpus");
  if (s.gpus && trim(*s.gpus).empty()) {
    throw usage_error("--gpus '': expected all, or a comma-separated list of GPU indices or UUIDs");
  }
  s.backend = read_backend_options(args);
  s.output = args.get("output");
  s.append = args.has("append");
  s.json = args.has("json");
  s.quiet = args.has("quiet");
  if (s.append && !s.output) throw usage_error("--append needs --output FILE");
  if (s.json && s.output) {
    throw usage_error(
        "--json and --output both set: choose one (--output - writes the records to stdout)");
  }
  for (const auto& label : args.all("label")) {
    const auto eq = label.find('=');
    const std::string key = label.substr(0, eq);
    if (eq == std::string::npos || !valid_label_key(key)) {
      throw usage_error(fmt::format(
          "--label '{}': expected KEY=VALUE, KEY made of letters, digits and _ and not starting "
          "with a digit",
          label));
    }
    if (std::find(kReservedLabels.begin(), kReservedLabels.end(), key) != kReservedLabels.end()) {
      throw usage_error(fmt::format("--label '{}': {} is set by joules itself{}", label, key,
                                    key == "run_id" ? "; use --run-id" : ""));
    }
    if (std::any_of(s.labels.begin(), s.labels.end(),
                    [&](const auto& kv) { return kv.first == key; })) {
      throw usage_error(fmt::format("--label '{}': label {} is given twice", label, key));
    }
    s.labels.emplace_back(key, label.substr(eq + 1));
  }
  s.exports = read_export_settings(args);
  read_component_options(args, s.backend.components);
  s.carbon = carbon::resolve(read_carbon_settings(args));
  const auto id = args.get("run-id");
  if (id && !valid_run_id(*id)) {
    throw usage_error(
        fmt::format("--run-id '{}': expected 1 to 128 printable characters without spaces", *id));
  }
  s.run_id = resolve_run_id(id);
  if (!valid_run_id(s.run_id)) {
    throw usage_error(fmt::format(
        "run id '{}' (from the environment): expected 1 to 128 printable characters without spaces",
        s.run_id));
  }
  return s;
}

measurement::measurement(const measure_settings& settings, std::string subcommand)
    : settings_(settings) {
  child_process::resolve_command(settings.command.at(0));
  sampler_options options;
  options.interval = settings.interval;
  // The sampler's thread opens the backend: only that thread ever calls the driver.
  sampler_ = std::make_unique<joules::sampler>([b = settings.backend] { return open_backend(b); },
                                               options);
  const backend& hw = sampler_->hardware();
  for (const auto& n : hw.notices())
    note(n);

  // GPUs come first in the device list (open_backend); the CPU and DRAM domains after them are
  // the machine's, not the job's: they are all measured.
  std::vector<device_info> gpus;
  for (const auto& d : hw.devices()) {
    if (d.kind == device_kind::gpu) gpus.push_back(d);
  }
  scope_result scope;
  if (settings.backend.components.gpu) {
    scope_request request;
    request.gpus = settings.gpus;
    request.cuda_visible_devices = env("CUDA_VISIBLE_DEVICES");
    request.nvidia_visible_devices = env("NVIDIA_VISIBLE_DEVICES");
    scope = select_devices(gpus, request, [this](std::string_view mig) {
      return sampler_->on_thread([&](backend& b) { return b.parent_of_mig(mig); });
    });
  } else {
    scope.source = "--components";
    scope.value = "no gpu";
  }
  for (const auto& n : scope.notes)
    note(n);
  for (const auto& c : hw.components()) {
    // Unreadable counters get their fix said once, before the run; absent ones only in the
    // summary and the records (a VM has no RAPL, and that is no news on every run).
    if (!c.fix.empty() && c.method == energy_method::none) {
      note(fmt::format("{} energy is not measured: {}; {}",
                       c.kind == device_kind::cpu ? "CPU" : "DRAM", c.detail, c.fix));
    }
  }

  for (std::size_t i : scope.devices) {
    const device_info& d = hw.devices()[i];
    if (d.method() == energy_method::none) {
      note(
          fmt::format("GPU {} ({}) has neither an energy counter nor a power reading; it is not "
                      "measured (to estimate it, use --backend sim with its model)",
                      d.index, d.name));
      continue;
    }
    measured_.push_back(i);
  }
  if (measured_.empty() && settings.backend.components.gpu) {
    throw fatal_error(
        "none of the chosen GPUs can be measured (no energy counter, no power reading); to "
        "estimate them, use --backend sim with their model");
  }
  for (std::size_t i = gpus.size(); i < hw.devices().size(); ++i)
    measured_.push_back(i);

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
  ctx_.components = hw.components();
  ctx_.carbon = settings.carbon;

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
             exporter::component_states(
                 settings.backend.components, hw.components(),
                 static_cast<std::size_t>(std::count_if(
                     ctx_.devices.begin(), ctx_.devices.end(),
                     [](const device_info& d) { return d.kind == device_kind::gpu; })))}),
        ctx_);
  }

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
  // every ~20 ms on the architectures that lack a counter (Pascal and older; nvml.md 4.1): a
  // reading every 100 ms would see one update in five, and the total would be off by the
  // sampling error.  Unless the user chose an interval, such GPUs are read at the sensor's rate.
  if (!settings_.interval_given && settings_.interval > kPolledInterval) {
    const auto& all = sampler_->hardware().devices();
    const bool polled = std::any_of(measured_.begin(), measured_.end(), [&](std::size_t i) {
      const device_info& d = all[i];
      return d.kind == device_kind::gpu && d.method() == energy_method::polled && !d.power_window;
    });
    if (polled) {
      sampler_->set_interval(kPolledInterval);
      ctx_.interval_ms = static_cast<double>(kPolledInterval.count());
      note(
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
    note(
        fmt::format("--interval {:.0f} ms shortened to {:.0f} ms: the RAPL energy counters could "
                    "wrap twice between readings",
                    ctx_.interval_ms, interval_ms));
    ctx_.interval_ms = interval_ms;
  }
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

void measurement::child_started(mono_time t) {
  ctx_.start_mono = t;
  ctx_.start_wall = std::chrono::system_clock::now();
  live_->set_started(t, energy_at(t));
  sampler_->boundary(t);
  if (sink_) sink_->write(session_start_record(ctx_));
}

std::vector<window_result> measurement::child_ended(const child_process& child) {
  return sampler_->finish(child.exit_time());
}

void measurement::add_window(const window_result& w) {
  live_->add_window(w);
  if (!run_) {
    run_ = w;
    return;
  }
  window_result& r = *run_;
  r.start_t = std::min(r.start_t, w.start_t);
  r.end_t = std::max(r.end_t, w.end_t);
  r.energy_uj += w.energy_uj;
  r.ticks += w.ticks;
  if (w.peak_power_w && (!r.peak_power_w || *w.peak_power_w > *r.peak_power_w))
    r.peak_power_w = w.peak_power_w;
  for (std::size_t d = 0; d < r.devices.size() && d < w.devices.size(); ++d) {
    device_window& a = r.devices[d];
    const device_window& b = w.devices[d];
    if (b.energy_uj) a.energy_uj = a.energy_uj.value_or(0) + *b.energy_uj;
    if (b.peak_power_w && (!a.peak_power_w || *b.peak_power_w > *a.peak_power_w))
      a.peak_power_w = b.peak_power_w;
    // A device measured two ways over the run (its counter stopped) is reported as polled.
    if (a.method != b.method && b.method != energy_method::none) {
      a.method = a.method == energy_method::none ? b.method : energy_method::polled;
    }
    a.lost = a.lost || b.lost;
  }
}

int measurement::finish(const child_process& child, const std::string& extra_json,
                        const std::string& summary_extra) {
  run_outcome out;
  out.end_mono = child.exit_time();
  out.end_wall = std::chrono::system_clock::now();
  out.exit_status = child.exit_status();
  out.exit_code = child.exit_code();
  out.exit_signal = child.term_signal();
  out.forwarded_signal = child.forwarded_signal();
  out.sampler_abandoned = sampler_->abandoned();
  out.extra_json = extra_json;
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
    if (tl.lost_at() && *tl.lost_at() < monotonic_seconds(out.end_mono))
      d.lost_at_s = *tl.lost_at() - start;
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
  if (!settings_.quiet && !settings_.json) {
    const auto footprint = carbon::assess(ctx_.carbon, to_joules(out.window.energy_uj).value);
    std::fprintf(stderr, "%s%s%s\n", summary_line(ctx_, out).c_str(), summary_extra.c_str(),
                 carbon::summary_text(footprint).c_str());
  }
  if (exporters_) {
    if (const std::string lost = exporters_->loss_line(); !lost.empty())
      std::fprintf(stderr, "%s\n", lost.c_str());
  }
  must_exit_hard_ = out.sampler_abandoned;
  return out.exit_status;
}

}  // namespace joules::cli
