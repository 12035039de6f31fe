// `joules doctor`'s two outputs: text for people, one JSON object for machines.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "doctor/report.hpp"
#include "text/escape.hpp"
#include "util/json_writer.hpp"
#include "util/strings.hpp"

#ifndef JOULES_VERSION
#define JOULES_VERSION "unknown"
#endif

namespace joules::doctor {
namespace {

// Strings from the driver, the file system or a CPU's model name, as a terminal shows them.
std::string shown(std::string_view outside) {
  return text::escape_for_terminal(outside);
}

using health::severity;

std::string paint(bool color, std::string_view text, std::string_view sgr) {
  if (!color) return std::string(text);
  return fmt::format("\x1b[{}m{}\x1b[0m", sgr, text);
}

std::string_view severity_color(severity s) {
  switch (s) {
    case severity::critical:
      return "31";
    case severity::warning:
      return "33";
    case severity::info:
      return "2";
  }
  return "2";
}

std::string watts_text(const std::optional<joules::watts>& w) {
  return w ? fmt::format("{:.0f} W", w->value) : "-";
}

std::string power_source_text(const device_info& d) {
  switch (d.power) {
    case power_source::field_instant:
      return "instantaneous (NVML_FI_DEV_POWER_INSTANT)";
    case power_source::power_usage:
      if (d.architecture == "gaudi") return "hlml_device_get_power_usage (HLML)";
      return d.power_window ? "1 s average (nvmlDeviceGetPowerUsage)"
                            : "instantaneous (nvmlDeviceGetPowerUsage)";
    case power_source::socket_current:
      return "current socket power (AMD SMI)";
    case power_source::socket_average:
      return "average socket power (AMD SMI)";
    case power_source::model:
      return "a model (simulated)";
    case power_source::none:
      break;
  }
  return d.has_energy_counter ? "none (its energy counter's rate)" : "none";
}

// How energy will be measured, in words ("energy      from its energy counter").
std::string method_text(const device_info& d) {
  switch (d.method()) {
    case energy_method::counter:
      return "from its energy counter";
    case energy_method::polled:
      return "integrated from power readings (no energy counter)";
    case energy_method::simulated:
      return "simulated";
    case energy_method::estimated:
      return "estimated";
    case energy_method::none:
      break;
  }
  return "not measurable (no energy counter, no power reading)";
}

std::string ms_text(double s) {
  return s < 0.01 ? fmt::format("{:.2f} ms", s * 1e3) : fmt::format("{:.0f} ms", s * 1e3);
}

// A GPU's labelled line, "    readings    TEXT", its text wrapped under itself within `width`.
constexpr std::size_t kTextColumn = 16;
void labelled(std::string& out, std::string_view label, std::string_view text, std::size_t width) {
  fmt::format_to(std::back_inserter(out), "    {:<{}}{}\n", label, kTextColumn - 4,
                 wrap_words(text, kTextColumn, kTextColumn, width));
}

// `items` parted by `sep`, as many to a line as fit in `width`, the lines after the first
// starting after `indent` spaces; an item is never cut ("cuda:3 = GPU 3").
std::string joined_within(const std::vector<std::string>& items, std::string_view sep,
                          std::size_t indent, std::size_t width) {
  std::string out;
  std::size_t col = indent;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::size_t w = items[i].size();
    if (i > 0 && col + sep.size() + w > width) {
      out += "\n" + std::string(indent, ' ');
      col = indent;
    } else if (i > 0) {
      out += sep;
      col += sep.size();
    }
    out += items[i];
    col += w;
  }
  return out;
}

std::string yes_no(const std::optional<bool>& b) {
  if (!b) return "unknown";
  return *b ? "yes" : "no";
}

// The heading of the GPU libraries' section: the library's name, or "GPU libraries" for several.
std::string library_heading(const backend_meta& m) {
  if (m.backend == "sim") return "Backend";
  if (!m.parts.empty()) return "GPU libraries";
  if (m.backend == "amdsmi") return "AMD SMI";
  if (m.backend == "rocm_smi") return "ROCm SMI";
  if (m.backend == "levelzero") return "Level Zero";
  if (m.backend == "hlml") return "HLML";
  return "NVML";
}

void library_lines(std::string& out, const backend_meta& m) {
  const auto unknown = [](const std::string& s) {
    return s.empty() ? std::string("unknown") : shown(s);
  };
  std::string version;
  if (m.backend == "nvml") {
    version = fmt::format("NVML {}", unknown(m.library_version));
  } else if (m.backend == "amdsmi") {
    version = fmt::format("AMD SMI {}", unknown(m.library_version));
  } else if (m.backend == "rocm_smi") {
    version = fmt::format("ROCm SMI {}", unknown(m.library_version));
  } else if (m.backend == "levelzero") {
    version = fmt::format("Level Zero Sysman through {}", unknown(m.library_version));
  } else if (m.backend == "hlml") {
    version = fmt::format("HLML {}", unknown(m.library_version));
  } else {
    fmt::format_to(std::back_inserter(out), "  {} · {}\n", shown(m.backend),
                   shown(m.library_version));
    return;
  }
  fmt::format_to(std::back_inserter(out), "  library     {}\n", shown(m.library_path));
  fmt::format_to(std::back_inserter(out),
                 "  version     {} · driver {} · {} of {} known entry points\n", version,
                 unknown(m.driver_version), m.symbols_found, m.symbols_known);
}

void gpu_text(std::string& out, const report& r, const gpu_report& g, bool color,
              std::size_t width) {
  const device_info& d = g.info;
  std::string suffix;
  if (is_nvidia(d)) {
    suffix =
        g.cuda_index ? fmt::format("  CUDA {}", *g.cuda_index) : std::string("  no CUDA index");
  } else if (!d.partition_indices.empty() && d.vendor == "amd") {
    suffix = fmt::format("  partitions {}", fmt::join(d.partition_indices, ","));
  }
  // The name, then its identifiers on the same line when they fit, else under the name.
  const std::string name = gpu_name(d);
  const std::string title =
      fmt::format("{}  {}{}", name, shown(d.name),
                  d.architecture.empty() ? "" : fmt::format(" ({})", shown(d.architecture)));
  const std::string ids = fmt::format("{}  {}{}", shown(d.uuid), shown(d.pci_bus_id), suffix);
  const bool one_line = 2 + title.size() + 2 + ids.size() <= width;
  fmt::format_to(std::back_inserter(out), "  {}{}{}\n", paint(color, name, "1"),
                 title.substr(name.size()),
                 one_line ? "  " + ids : "\n" + std::string(kTextColumn - 7, ' ') + ids);
  std::string now;
  if (g.reading.status == read_status::lost) {
    now = paint(color, "lost", "31");
  } else if (g.reading.power) {
    now = fmt::format("{:.0f} W now", g.reading.power->value);
  }
  if (g.read_s) now += fmt::format("{}read in {}", now.empty() ? "" : ", ", ms_text(*g.read_s));
  labelled(out, "energy",
           fmt::format("{} · power {}{}", method_text(d), power_source_text(d),
                       now.empty() ? "" : " · " + now),
           width);
  if (g.caps.gpm || g.caps.mig_enabled || g.caps.compute_capability_major) {
    std::string cc;
    if (g.caps.compute_capability_major) {
      cc = fmt::format(" · compute capability {}.{}", *g.caps.compute_capability_major,
                       g.caps.compute_capability_minor.value_or(0));
    }
    fmt::format_to(std::back_inserter(out), "    profiling   GPM {} · MIG {}{}\n",
                   yes_no(g.caps.gpm),
                   g.caps.mig_enabled ? (*g.caps.mig_enabled ? "on" : "off") : "-", cc);
  }
  std::string range;
  if (d.min_power_limit && d.max_power_limit) {
    range =
        fmt::format(", range {:.0f}-{:.0f} W", d.min_power_limit->value, d.max_power_limit->value);
  }
  std::string control;
  if (g.caps.power_limit_control == false) {
    control = " · fixed";
  } else if (g.caps.power_limit_control) {
    control = fmt::format(" · this process may change it: {}",
                          r.power_limit_permission.empty() ? yes_no(g.caps.power_limit_permission)
                                                           : r.power_limit_permission);
  }
  fmt::format_to(std::back_inserter(out), "    power limit {} (default {}{}){}\n",
                 watts_text(d.power_limit), watts_text(d.default_power_limit), range, control);
  std::string health = paint(color, "ok", "32");
  std::size_t shown = 0;
  std::string flags;
  for (const auto& f : r.findings) {
    if (f.gpu != d.index || f.vendor != d.vendor || f.level == severity::info) continue;
    if (shown++ > 0) flags += ", ";
    flags += paint(color, f.code, severity_color(f.level));
  }
  if (!flags.empty()) health = flags;
  if (!g.health && g.reading.status != read_status::lost) {
    health = g.not_checked.empty() ? "not read" : "not checked: " + g.not_checked;
    if (!flags.empty()) health += " · " + flags;
  }
  labelled(out, "health", health, width);
  if (!g.caps.health_readings.empty()) {
    labelled(out, "readings", fmt::format("{}", fmt::join(g.caps.health_readings, ", ")), width);
  }
}

void write_optional_bool(json_writer& w, std::string_view key, const std::optional<bool>& b) {
  w.key(key);
  if (b) {
    w.value(*b);
  } else {
    w.null();
  }
}

std::optional<double> value_of(const std::optional<joules::watts>& w) {
  return w ? std::optional<double>(w->value) : std::nullopt;
}

}  // namespace

std::string render_text(const report& r, bool color, std::size_t width) {
  std::string out;
  fmt::format_to(std::back_inserter(out), "{}  {}  ·  joules {}\n\n",
                 paint(color, "joules doctor", "1"), shown(r.hostname), JOULES_VERSION);
  out += paint(color, r.backend_ok ? library_heading(r.meta) : "GPU library", "1") + "\n";
  if (!r.backend_ok) {
    fmt::format_to(std::back_inserter(out), "  {}\n", paint(color, shown(r.backend_error), "31"));
  } else if (r.meta.parts.empty()) {
    library_lines(out, r.meta);
  } else {
    for (const auto& part : r.meta.parts)
      library_lines(out, part);
  }
  for (const auto& n : r.notices)
    fmt::format_to(std::back_inserter(out), "  {}\n", shown(n));

  if (r.backend_ok) {
    fmt::format_to(std::back_inserter(out), "\n{} ({} checked: {})\n", paint(color, "GPUs", "1"),
                   r.gpus.size(), shown(r.scope));
    for (const auto& g : r.gpus)
      gpu_text(out, r, g, color, width);
    const bool nvidia =
        r.gpus.empty() ||
        std::any_of(r.gpus.begin(), r.gpus.end(), [](const auto& g) { return is_nvidia(g.info); });
    if (nvidia) {
      fmt::format_to(std::back_inserter(out), "\n{}\n", paint(color, "CUDA devices", "1"));
      fmt::format_to(
          std::back_inserter(out), "  {}\n",
          joined_within({fmt::format("CUDA_DEVICE_ORDER={}{}", r.cuda.order,
                                     r.cuda.order_from_env ? "" : " (the default)"),
                         fmt::format("CUDA_VISIBLE_DEVICES={}",
                                     r.cuda.visible ? fmt::format("'{}'", shown(*r.cuda.visible))
                                                    : std::string("unset"))},
                        " · ", 2, width));
      std::vector<std::string> pairs;
      for (const auto& e : r.cuda.devices)
        pairs.push_back(fmt::format("cuda:{} = GPU {}", e.cuda_index, e.nvml_index));
      if (pairs.empty()) pairs.emplace_back("CUDA sees no GPU");
      if (!r.cuda.certain) pairs.back() += "  (assumed: see the findings)";
      fmt::format_to(std::back_inserter(out), "  {}\n", joined_within(pairs, " · ", 2, width));
    }
  }

  if (!r.host_devices.empty() || !r.components.empty()) {
    fmt::format_to(std::back_inserter(out), "\n{}\n", paint(color, "CPU and DRAM (RAPL)", "1"));
    for (const auto& c : r.components) {
      fmt::format_to(std::back_inserter(out), "  {:<5} {}\n", to_string(c.kind),
                     wrap_words(fmt::format("{} · {}",
                                            c.method == energy_method::none ? "not measured"
                                                                            : to_string(c.method),
                                            shown(c.detail)),
                                8, 8, width));
      if (!c.fix.empty())
        fmt::format_to(std::back_inserter(out), "        fix: {}\n", shown(c.fix));
    }
    for (const auto& d : r.host_devices)
      fmt::format_to(std::back_inserter(out), "  {:<5} {} ({})\n", to_string(d.kind), shown(d.name),
                     to_string(d.method()));
    // Zones found but not added up, so that a psys or core zone missing from the sum is not a
    // surprise.
    for (const auto& c : r.components) {
      for (const auto& z : c.left_out)
        fmt::format_to(std::back_inserter(out), "  left out  {}\n", shown(z));
    }
  }

  fmt::format_to(std::back_inserter(out), "\n{}\n", paint(color, "Findings", "1"));
  if (r.findings.empty()) out += "  none\n";
  for (const auto& f : r.findings) {
    // The message wrapped under itself; a fix stays on one line, as a command to copy.
    fmt::format_to(
        std::back_inserter(out), "  {}  {}\n",
        paint(color, fmt::format("{:<8}", health::to_string(f.level)), severity_color(f.level)),
        wrap_words(shown(f.message), 12, 12, width));
    if (!f.fix.empty())
      fmt::format_to(std::back_inserter(out), "            fix: {}\n", shown(f.fix));
  }
  if (!r.ignored.empty()) {
    fmt::format_to(std::back_inserter(out), "\n{}\n", paint(color, "Ignored (--ignore)", "1"));
    for (const auto& f : r.ignored) {
      fmt::format_to(std::back_inserter(out), "  {:<8}  {}\n", health::to_string(f.level),
                     wrap_words(shown(f.message), 12, 12, width));
    }
  }
  fmt::format_to(std::back_inserter(out), "\nStatus: {} (exit {})\n",
                 health::status_name(r.exit_status), r.exit_status);
  return out;
}

std::string render_json(const report& r) {
  json_writer w;
  w.begin_object()
      .field("type", "doctor")
      .field("schema_version", 1)
      .field("time", r.time)
      .field("hostname", r.hostname)
      .field("joules_version", JOULES_VERSION)
      .field("status", health::status_name(r.exit_status))
      .field("exit_status", r.exit_status);
  w.key("backend").begin_object().field("ok", r.backend_ok);
  w.key("error");
  if (r.backend_ok) {
    w.null();
  } else {
    w.value(r.backend_error);
  }
  w.field("name", r.meta.backend)
      .field("library_path", r.meta.library_path)
      .field("nvml_version", find_part(r.meta, "nvml") != nullptr
                                 ? find_part(r.meta, "nvml")->library_version
                                 : std::string())
      .field("driver_version", r.meta.driver_version)
      .field("symbols_found", r.meta.symbols_found)
      .field("symbols_known", r.meta.symbols_known);
  // Every GPU library opened, with its own versions (one, or several on a node of two vendors).
  w.key("libraries").begin_array();
  for (const auto& m : r.meta.parts.empty() ? std::vector<backend_meta>{r.meta} : r.meta.parts) {
    if (!r.backend_ok) break;
    w.begin_object()
        .field("name", m.backend)
        .field("library_path", m.library_path)
        .field("library_version", m.library_version)
        .field("driver_version", m.driver_version)
        .end_object();
  }
  w.end_array().end_object();
  w.key("notices").begin_array();
  for (const auto& n : r.notices)
    w.value(n);
  w.end_array();
  w.field("scope", r.scope);
  w.key("gpus").begin_array();
  for (const auto& g : r.gpus) {
    const device_info& d = g.info;
    w.begin_object()
        .field("index", d.index)
        .field("vendor", d.vendor)
        .field("uuid", d.uuid)
        .field("name", d.name)
        .field("architecture", d.architecture)
        .field("pci_bus_id", d.pci_bus_id)
        .field("cuda_index", g.cuda_index)
        .field("method", to_string(d.method()))
        .field("energy_counter", d.has_energy_counter)
        .field("power_source", to_string(d.power))
        .field("power_window_s",
               d.power_window ? std::optional(d.power_window->count()) : std::nullopt)
        .field("lost", g.reading.status == read_status::lost)
        .field("power_w", value_of(g.reading.power))
        .field("power_limit_w", value_of(d.power_limit))
        .field("default_power_limit_w", value_of(d.default_power_limit))
        .field("min_power_limit_w", value_of(d.min_power_limit))
        .field("max_power_limit_w", value_of(d.max_power_limit))
        .field("read_time_s",
               g.read_s ? std::optional(std::round(*g.read_s * 1e6) / 1e6) : std::nullopt)
        .field("health_checked", g.health.has_value());
    write_optional_bool(w, "power_limit_control", g.caps.power_limit_control);
    write_optional_bool(w, "power_limit_permission", g.caps.power_limit_permission);
    w.field("power_limit_permission_detail", r.power_limit_permission);
    write_optional_bool(w, "gpm", g.caps.gpm);
    write_optional_bool(w, "mig_enabled", g.caps.mig_enabled);
    w.key("compute_capability");
    if (g.caps.compute_capability_major) {
      w.value(fmt::format("{}.{}", *g.caps.compute_capability_major,
                          g.caps.compute_capability_minor.value_or(0)));
    } else {
      w.null();
    }
    w.key("health_readings").begin_array();
    for (const auto& name : g.caps.health_readings)
      w.value(name);
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.key("cuda")
      .begin_object()
      .field("device_order", r.cuda.order)
      .field("device_order_set", r.cuda.order_from_env);
  w.key("visible_devices");
  if (r.cuda.visible) {
    w.value(*r.cuda.visible);
  } else {
    w.null();
  }
  w.field("certain", r.cuda.certain);
  w.key("devices").begin_array();
  for (const auto& e : r.cuda.devices) {
    w.begin_object()
        .field("cuda_index", e.cuda_index)
        .field("nvml_index", e.nvml_index)
        .field("uuid", e.uuid)
        .end_object();
  }
  w.end_array().end_object();
  w.key("components").begin_array();
  for (const auto& c : r.components) {
    w.begin_object()
        .field("kind", to_string(c.kind))
        .field("method", to_string(c.method))
        .field("detail", c.detail)
        .field("fix", c.fix);
    w.key("left_out").begin_array();
    for (const auto& z : c.left_out)
      w.value(z);
    w.end_array().end_object();
  }
  w.end_array();
  w.key("changed_power_limits").begin_array();
  for (const auto& c : r.changed_limits) {
    w.begin_object()
        .field("gpu", c.gpu)
        .field("uuid", c.uuid)
        .field("original_limit_w", c.original_w);
    w.field("command", c.command).field("pid", static_cast<std::int64_t>(c.pid));
    w.field("started", c.started).field("owner_running", c.owner_running);
    w.field("journal", c.journal).end_object();
  }
  w.end_array();
  auto findings = [&w](const char* key, const std::vector<health::finding>& list) {
    w.key(key).begin_array();
    for (const auto& f : list) {
      w.begin_object()
          .field("severity", health::to_string(f.level))
          .field("code", f.code)
          .field("gpu", f.gpu)
          .field("message", f.message)
          .field("fix", f.fix)
          .end_object();
    }
    w.end_array();
  };
  findings("findings", r.findings);
  findings("ignored", r.ignored);
  w.key("checks").begin_object();
  w.key("fail_on").begin_array();
  for (const auto& c : r.policy.fail_on)
    w.value(c);
  w.end_array();
  w.key("ignore").begin_array();
  for (const auto& c : r.policy.ignore)
    w.value(c);
  w.end_array().end_object();
  w.end_object();
  return w.take() + "\n";
}

}  // namespace joules::doctor
