#include "record/session_records.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <map>
#include <utility>

#include "util/json_writer.hpp"
#include "util/strings.hpp"

namespace joules {
void common_record_fields(json_writer& w, std::string_view type, const run_context& ctx) {
  w.field("type", type);
  w.field("schema_version", kSchemaVersion);
  w.field("time", iso8601_utc(std::chrono::system_clock::now()));
  w.field("run_id", ctx.run_id);
  w.field("hostname", ctx.hostname);
  w.key("labels").begin_object();
  for (const auto& [k, v] : ctx.labels)
    w.field(k, v);
  w.end_object();
}

namespace {

// The names of the standard signals.  Not sigabbrev_np: it needs glibc 2.32, and the manylinux
// wheel runs on glibc 2.28 (docs/python.md).  Realtime and unknown signals get their number.
std::string signal_name(int sig) {
  static constexpr std::pair<int, const char*> names[] = {
      {SIGHUP, "HUP"},       {SIGINT, "INT"},   {SIGQUIT, "QUIT"},   {SIGILL, "ILL"},
      {SIGTRAP, "TRAP"},     {SIGABRT, "ABRT"}, {SIGBUS, "BUS"},     {SIGFPE, "FPE"},
      {SIGKILL, "KILL"},     {SIGUSR1, "USR1"}, {SIGSEGV, "SEGV"},   {SIGUSR2, "USR2"},
      {SIGPIPE, "PIPE"},     {SIGALRM, "ALRM"}, {SIGTERM, "TERM"},   {SIGCHLD, "CHLD"},
      {SIGCONT, "CONT"},     {SIGSTOP, "STOP"}, {SIGTSTP, "TSTP"},   {SIGTTIN, "TTIN"},
      {SIGTTOU, "TTOU"},     {SIGURG, "URG"},   {SIGXCPU, "XCPU"},   {SIGXFSZ, "XFSZ"},
      {SIGVTALRM, "VTALRM"}, {SIGPROF, "PROF"}, {SIGWINCH, "WINCH"}, {SIGIO, "IO"},
      {SIGPWR, "PWR"},       {SIGSYS, "SYS"}};
  for (const auto& [number, name] : names) {
    if (number == sig) return fmt::format("SIG{}", name);
  }
  return fmt::format("signal {}", sig);
}

std::string device_summary(const std::vector<device_info>& devices) {
  std::vector<std::pair<std::string, int>> groups;
  for (const auto& d : devices) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g.first == d.name; });
    if (it == groups.end()) {
      groups.emplace_back(d.name, 1);
    } else {
      ++it->second;
    }
  }
  std::string out;
  for (const auto& [name, n] : groups) {
    if (!out.empty()) out += " + ";
    out += n > 1 ? fmt::format("{}x {}", n, name) : name;
  }
  return out;
}

std::string format_wh(double j) {
  const double wh = j / kJoulesPerWattHour;
  return std::abs(wh) >= 0.01 ? fmt::format("{:.2f} Wh", wh) : fmt::format("{:.3g} Wh", wh);
}

}  // namespace

std::string_view to_string(run_status s) {
  switch (s) {
    case run_status::completed:
      return "completed";
    case run_status::interrupted:
      return "interrupted";
    case run_status::child_failed:
      return "child_failed";
    case run_status::measurement_degraded:
      return "measurement_degraded";
  }
  return "completed";
}

std::vector<std::string> degradations(const run_context& ctx, const run_outcome& out) {
  std::vector<std::string> why;
  for (std::size_t i = 0; i < out.devices.size() && i < ctx.devices.size(); ++i) {
    const auto& d = out.devices[i];
    const std::string idx = device_label(ctx.devices[i]);
    if (!ctx.devices[i].unreadable.empty()) {
      why.push_back(fmt::format("{} was lost before the start ({}); its energy is unknown", idx,
                                ctx.devices[i].unreadable));
    } else if (d.lost_at_s) {
      why.push_back(
          fmt::format("{} stopped reporting {:.3f} s after the start; its energy "
                      "after that is not counted",
                      idx, *d.lost_at_s));
    }
    if (d.silent_at_s) {
      why.push_back(
          fmt::format("{} stopped giving energy and power readings {:.3f} s after the start "
                      "(not supported any more); its energy after that is not counted",
                      idx, *d.silent_at_s));
    }
    if (d.counter_lost_at_s) {
      why.push_back(
          fmt::format("{}'s energy counter stopped {:.3f} s after the start; polled "
                      "power was integrated from then on",
                      idx, *d.counter_lost_at_s));
    }
    if (d.counter_resets > 0) {
      why.push_back(
          fmt::format("{}'s energy counter was reset {} time(s) (driver reload); "
                      "{:.3f} J across the reset(s) is estimated",
                      idx, d.counter_resets, d.reset_estimated_j));
    }
    if (d.read_errors > 0) {
      why.push_back(fmt::format("{}: {} reading(s) failed", idx, d.read_errors));
    }
    if (i < out.window.devices.size() && !out.window.devices[i].energy_uj &&
        ctx.devices[i].unreadable.empty()) {
      why.push_back(fmt::format("{} gave no reading; its energy is unknown", idx));
    }
  }
  if (out.sampler_abandoned) {
    why.push_back(
        "the last readings never came back (a hung driver call); totals end at the last "
        "reading that did");
  }
  if (out.records_lost > 0)
    why.push_back(fmt::format("{} record(s) could not be written", out.records_lost));
  return why;
}

run_status status_of(const run_context& ctx, const run_outcome& out) {
  const bool by_user_signal =
      out.forwarded_signal.has_value() ||
      (out.exit_signal &&
       (*out.exit_signal == SIGINT || *out.exit_signal == SIGTERM || *out.exit_signal == SIGHUP));
  if (by_user_signal) return run_status::interrupted;
  if (out.exit_status != 0) return run_status::child_failed;
  if (!degradations(ctx, out).empty()) return run_status::measurement_degraded;
  return run_status::completed;
}

std::string run_method(const window_result& w) {
  std::string method;
  for (const auto& d : w.devices) {
    const std::string m(to_string(d.method));
    if (method.empty()) {
      method = m;
    } else if (method != m) {
      return "mixed";
    }
  }
  return method.empty() ? "none" : method;
}

std::string device_label(const device_info& d) {
  switch (d.kind) {
    case device_kind::gpu:
      return gpu_name(d);
    case device_kind::cpu:
      return d.estimated ? std::string("CPU estimate") : fmt::format("CPU {}", d.architecture);
    case device_kind::dram:
      return fmt::format("DRAM {}", d.uuid);
  }
  return d.uuid;
}

std::vector<component_total> component_totals(const run_context& ctx, const window_result& w) {
  std::vector<component_total> out;
  for (device_kind k : {device_kind::gpu, device_kind::cpu, device_kind::dram}) {
    component_total t;
    t.kind = k;
    for (std::size_t i = 0; i < ctx.devices.size() && i < w.devices.size(); ++i) {
      if (ctx.devices[i].kind != k) continue;
      ++t.devices;
      const device_window& dw = w.devices[i];
      if (dw.energy_uj) t.energy_uj = t.energy_uj.value_or(0) + *dw.energy_uj;
      const std::string m(to_string(dw.method));
      t.method = t.method.empty() || t.method == m ? m : "mixed";
    }
    if (t.devices > 0) out.push_back(t);
  }
  return out;
}

microjoules estimated_energy_uj(const run_context& ctx, const window_result& w) {
  microjoules uj = 0;
  for (std::size_t i = 0; i < ctx.devices.size() && i < w.devices.size(); ++i) {
    if (w.devices[i].method == energy_method::estimated && w.devices[i].energy_uj)
      uj += *w.devices[i].energy_uj;
  }
  return uj;
}

void write_components_json(json_writer& w, const run_context& ctx, const window_result& win,
                           double duration_s) {
  w.begin_object();
  for (const auto& t : component_totals(ctx, win)) {
    std::optional<double> e;
    if (t.energy_uj) e = to_joules(*t.energy_uj).value;
    w.key(to_string(t.kind)).begin_object();
    w.field("energy_j", e);
    w.field("avg_power_w", e && duration_s > 0 ? std::optional(*e / duration_s) : std::nullopt);
    w.field("method", t.method).field("devices", static_cast<std::uint64_t>(t.devices));
    w.end_object();
  }
  w.end_object();
}

std::string session_start_record(const run_context& ctx) {
  json_writer w;
  w.begin_object();
  common_record_fields(w, "session_start", ctx);
  w.field("joules_version", JOULES_VERSION);
  w.field("subcommand", ctx.subcommand);
  w.key("command").begin_array();
  for (const auto& a : ctx.command)
    w.value(a);
  w.end_array();
  w.field("pid", static_cast<std::int64_t>(getpid()));
  w.field("user", ctx.user.empty() ? std::optional<std::string>() : std::optional(ctx.user));
  w.field("start_time", iso8601_utc(ctx.start_wall));
  w.field("start_monotonic_s", monotonic_seconds(ctx.start_mono));
  w.field("interval_ms", ctx.interval_ms);
  w.field("samples_interval_ms", ctx.samples_interval_ms);
  const auto text = [](const std::string& s) {
    return s.empty() ? std::optional<std::string>() : std::optional(s);
  };
  w.field("backend", ctx.backend.backend);
  w.field("driver_version", text(ctx.backend.driver_version));
  // NVML's own fields stay NVML's; every GPU library (one per vendor) is in gpu_libraries.
  const backend_meta* nvml = find_part(ctx.backend, "nvml");
  w.field("nvml_version", nvml != nullptr ? text(nvml->library_version) : std::nullopt);
  w.field("nvml_library", nvml != nullptr ? text(nvml->library_path) : std::nullopt);
  w.key("gpu_libraries").begin_array();
  for (const auto& m :
       ctx.backend.parts.empty() ? std::vector<backend_meta>{ctx.backend} : ctx.backend.parts) {
    if (m.backend == "rapl" || m.backend == "sim") continue;
    w.begin_object().field("backend", m.backend);
    w.field("library", text(m.library_path)).field("version", text(m.library_version));
    w.field("driver_version", text(m.driver_version)).end_object();
  }
  w.end_array();
  w.key("scope")
      .begin_object()
      .field("source", ctx.scope.source)
      .field("value", ctx.scope.value)
      .end_object();
  w.key("devices").begin_array();
  for (const auto& d : ctx.devices) {
    w.begin_object();
    w.field("kind", to_string(d.kind));
    w.field("vendor", d.vendor.empty() ? std::optional<std::string>() : std::optional(d.vendor));
    w.field("index", d.index).field("uuid", d.uuid).field("pci_bus_id", d.pci_bus_id);
    w.field("name", d.name);
    w.field("architecture",
            d.architecture.empty() ? std::optional<std::string>() : std::optional(d.architecture));
    w.field("method", to_string(d.method()));
    w.field("energy_counter", d.has_energy_counter);
    w.field("power_source", to_string(d.power));
    w.field("power_window_s",
            d.power_window ? std::optional(d.power_window->count()) : std::nullopt);
    w.field("power_limit_w", d.power_limit ? std::optional(d.power_limit->value) : std::nullopt);
    w.field("default_power_limit_w",
            d.default_power_limit ? std::optional(d.default_power_limit->value) : std::nullopt);
    // A GPU chosen through MIG instances is measured whole: its energy is shared by every
    // instance on it, those of other jobs included (docs/nvml-notes.md §9.3).
    bool shared = false;
    w.key("mig_instances").begin_array();
    for (const auto& m : ctx.scope.mig) {
      if (m.gpu != d.key()) continue;
      w.value(m.mig);
      shared = true;
    }
    w.end_array();
    w.field("energy_shared", shared);
    w.end_object();
  }
  w.end_array();
  w.key("notices").begin_array();
  for (const auto& n : ctx.notices)
    w.value(n);
  w.end_array();
  w.key("components").begin_array();
  for (const auto& c : ctx.components) {
    w.begin_object().field("kind", to_string(c.kind));
    // A model's numbers (simulated) are not measured; `method` says which model.
    w.field("measured", c.method != energy_method::none && c.method != energy_method::simulated)
        .field("method", to_string(c.method));
    w.field("detail", c.detail);
    w.field("fix", c.fix.empty() ? std::optional<std::string>() : std::optional(c.fix));
    w.end_object();
  }
  w.end_array();
  w.key("carbon");
  carbon::write_factors_json(w, ctx.carbon);
  w.end_object();
  return w.take();
}

std::string session_end_record(const run_context& ctx, const run_outcome& out) {
  const window_result& win = out.window;
  const double duration = seconds_between(ctx.start_mono, out.end_mono);
  const double energy = to_joules(win.energy_uj).value;
  const auto why = degradations(ctx, out);
  json_writer w;
  w.begin_object();
  common_record_fields(w, "session_end", ctx);
  w.field("status", to_string(status_of(ctx, out)));
  w.field("degraded", !why.empty());
  w.key("degradations").begin_array();
  for (const auto& s : why)
    w.value(s);
  w.end_array();
  w.field("exit_status", out.exit_status);
  w.field("exit_code", out.exit_code);
  w.field("exit_signal", out.exit_signal);
  w.field("forwarded_signal", out.forwarded_signal);
  w.field("start_time", iso8601_utc(ctx.start_wall));
  w.field("end_time", iso8601_utc(out.end_wall));
  w.field("start_monotonic_s", monotonic_seconds(ctx.start_mono));
  w.field("end_monotonic_s", monotonic_seconds(out.end_mono));
  w.field("duration_s", duration);
  w.field("energy_j", energy);
  w.field("energy_wh", energy / kJoulesPerWattHour);
  w.field("avg_power_w", duration > 0 ? std::optional(energy / duration) : std::nullopt);
  w.field("peak_power_w", win.peak_power_w);
  w.field("samples", static_cast<std::uint64_t>(win.ticks));
  w.field("method", run_method(win));
  w.key("devices").begin_array();
  for (std::size_t i = 0; i < ctx.devices.size() && i < win.devices.size(); ++i) {
    const device_info& d = ctx.devices[i];
    const device_window& dw = win.devices[i];
    const device_outcome od = i < out.devices.size() ? out.devices[i] : device_outcome{};
    std::optional<double> e;
    if (dw.energy_uj) e = to_joules(*dw.energy_uj).value;
    w.begin_object();
    w.field("kind", to_string(d.kind));
    w.field("vendor", d.vendor.empty() ? std::optional<std::string>() : std::optional(d.vendor));
    w.field("index", d.index).field("uuid", d.uuid).field("name", d.name);
    w.field("method", to_string(dw.method));
    w.field("energy_j", e);
    w.field("avg_power_w", e && duration > 0 ? std::optional(*e / duration) : std::nullopt);
    w.field("peak_power_w", dw.peak_power_w);
    w.field("counter_resets", od.counter_resets);
    w.field("counter_wraps", od.counter_wraps);
    w.field("reset_estimated_j", od.reset_estimated_j);
    w.field("read_errors", od.read_errors);
    w.field("lost_at_s", od.lost_at_s);
    w.field("counter_lost_at_s", od.counter_lost_at_s);
    w.field("readings_stopped_at_s", od.silent_at_s);
    w.end_object();
  }
  w.end_array();
  w.key("components");
  write_components_json(w, ctx, win, duration);
  w.field("estimated_energy_j", to_joules(estimated_energy_uj(ctx, win)).value);
  w.key("carbon");
  carbon::write_json(w, carbon::assess(ctx.carbon, energy));
  if (!out.extra_json.empty()) w.key("wrap").raw(out.extra_json);
  for (const auto& [key, json] : out.sections)
    w.key(key).raw(json);
  if (!out.exporters_json.empty()) w.key("exporters").raw(out.exporters_json);
  w.end_object();
  return w.take();
}

run_summary summarise(const run_context& ctx, const run_outcome& out) {
  run_summary sum;
  const double duration = seconds_between(ctx.start_mono, out.end_mono);
  const double energy = to_joules(out.window.energy_uj).value;
  std::string& h = sum.headline;
  h = fmt::format("{} ({}) in {:.2f} s", format_joules(energy), format_wh(energy), duration);
  if (duration > 0) h += fmt::format(", avg {:.0f} W", energy / duration);
  if (out.window.peak_power_w) {
    // RAPL domains have energy counters and no power readings: the peak is the GPUs' then.
    const bool rapl = std::any_of(ctx.devices.begin(), ctx.devices.end(), [](const auto& d) {
      return d.kind != device_kind::gpu && d.power == power_source::none;
    });
    h += fmt::format(", peak {:.0f} W{}", *out.window.peak_power_w, rapl ? " of GPUs" : "");
  }
  const std::string samples =
      fmt::format("{} sample{}", out.window.ticks, out.window.ticks == 1 ? "" : "s");
  const std::string simulated =
      ctx.backend.backend == "sim" ? " (simulated: a model, not a measurement)" : "";
  const auto parts = component_totals(ctx, out.window);
  if (parts.size() == 1 && parts[0].kind == device_kind::gpu) {
    sum.parts.push_back({"devices", device_summary(ctx.devices), ""});
    sum.parts.push_back(
        {"method", fmt::format("{}, {}{}", run_method(out.window), samples, simulated), ""});
  } else {
    // GPU, CPU and DRAM each with their energy and method: a node total is never a blur.
    std::string list;
    for (const auto& t : parts) {
      std::vector<device_info> of_kind;
      for (const auto& d : ctx.devices) {
        if (d.kind == t.kind) of_kind.push_back(d);
      }
      const std::string what = t.kind == device_kind::gpu   ? "GPU"
                               : t.kind == device_kind::cpu ? "CPU"
                                                            : "DRAM";
      const std::string part_j =
          t.energy_uj ? format_joules(to_joules(*t.energy_uj).value) : std::string("unknown");
      if (!list.empty()) list += " + ";
      list += t.kind == device_kind::dram
                  ? fmt::format("{} {} ({})", what, part_j, t.method)
                  : fmt::format("{} {} ({}, {})", what, part_j, device_summary(of_kind), t.method);
    }
    sum.parts.push_back({"devices", list, ""});
    sum.parts.push_back({"method", samples + simulated, ""});
  }
  if (out.exit_signal) {
    sum.parts.push_back(
        {"command", fmt::format("command killed by {}", signal_name(*out.exit_signal)), ""});
  } else if (out.exit_status != 0) {
    sum.parts.push_back({"command", fmt::format("command exited with {}", out.exit_status), ""});
  }
  for (const auto& reason : degradations(ctx, out))
    sum.parts.push_back({"warning", reason, ""});
  // What was not measured, once: "CPU, DRAM not measured: <why>".
  std::vector<std::pair<std::string, std::string>> missing;
  for (const auto& c : ctx.components) {
    if (c.method != energy_method::none) continue;
    const std::string what = c.kind == device_kind::cpu ? "CPU" : "DRAM";
    if (!missing.empty() && missing.back().second == c.detail) {
      missing.back().first += ", " + what;
    } else {
      missing.emplace_back(what, c.detail);
    }
  }
  for (const auto& [what, detail] : missing) {
    sum.parts.push_back({what, fmt::format("{} not measured: {}", what, detail), "",
                         fmt::format("not measured: {}", detail)});
  }
  return sum;
}

run_summary summarise(const run_context& ctx, const run_outcome& out,
                      const std::vector<summary_part>& extra) {
  run_summary sum = summarise(ctx, out);
  sum.parts.insert(sum.parts.end(), extra.begin(), extra.end());
  const auto footprint = carbon::assess(ctx.carbon, to_joules(out.window.energy_uj).value);
  for (auto& [label, text] : carbon::summary_pieces(footprint)) {
    // "no CO2e: why" reads "CO2e  none: why" in the block.
    const bool none = text.starts_with("no CO2e: ");
    sum.parts.push_back({label, text, "", none ? "none: " + text.substr(9) : std::string()});
  }
  return sum;
}

std::string summary_line(const run_context& ctx, const run_outcome& out) {
  return summarise(ctx, out).line();
}

}  // namespace joules
