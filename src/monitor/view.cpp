// Formatting shared by monitor's views, its plain lines and its JSONL samples.  Every number goes
// through fmt (locale-independent); an unknown value is "-" for people and null for machines.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "health/findings.hpp"
#include "monitor/screen_parts.hpp"
#include "monitor/view.hpp"
#include "text/escape.hpp"
#include "util/json_writer.hpp"

namespace joules::monitor {
namespace {

std::string short_device_label(const device_info& d) {
  // "0" for NVIDIA's GPUs, as nvidia-smi dmon numbers them; "amd0", "intel0" for the others.
  if (d.kind == device_kind::gpu) return fmt::format("{}{}", is_nvidia(d) ? "" : d.vendor, d.index);
  return fmt::format("{}{}", to_string(d.kind), d.index);
}

template <class T>
std::string or_dash(const std::optional<T>& v, std::string_view spec = "{}") {
  if (!v) return "-";
  return fmt::format(fmt::runtime(spec), *v);
}

// The default power limit: read with the health readings, else probed at open.
std::optional<double> default_limit_of(const device_view& d) {
  if (d.now.health && d.now.health->default_power_limit_w)
    return d.now.health->default_power_limit_w;
  if (d.info.default_power_limit) return d.info.default_power_limit->value;
  return std::nullopt;
}

void write_health(json_writer& w, const device_view& d) {
  const health_reading empty;
  const health_reading& h = d.now.health ? *d.now.health : empty;
  auto pct = [](const std::optional<double>& v) { return rounded(v, 1); };
  auto rate = [](const std::optional<double>& v) { return rounded(v, 0); };
  w.field("gpu_util_percent", h.gpu_util_percent);
  w.field("memory_util_percent", h.memory_util_percent);
  w.field("encoder_util_percent", h.encoder_util_percent);
  w.field("decoder_util_percent", h.decoder_util_percent);
  w.field("sm_activity_percent", pct(h.sm_activity_percent));
  w.field("sm_occupancy_percent", pct(h.sm_occupancy_percent));
  w.field("tensor_activity_percent", pct(h.tensor_activity_percent));
  w.field("dram_bandwidth_percent", pct(h.dram_bandwidth_percent));
  w.field("memory_used_bytes", h.memory_used_bytes);
  w.field("memory_reserved_bytes", h.memory_reserved_bytes);
  w.field("memory_total_bytes", h.memory_total_bytes);
  w.field("temperature_c", rounded(h.temperature_c, 1));
  w.field("memory_temperature_c", rounded(h.memory_temperature_c, 1));
  w.field("slowdown_temperature_c", rounded(h.slowdown_temperature_c, 1));
  w.field("shutdown_temperature_c", rounded(h.shutdown_temperature_c, 1));
  w.field("sm_clock_mhz", h.sm_clock_mhz);
  w.field("max_sm_clock_mhz", h.max_sm_clock_mhz);
  w.field("memory_clock_mhz", h.memory_clock_mhz);
  w.field("max_memory_clock_mhz", h.max_memory_clock_mhz);
  w.field("fan_percent", h.fan_percent);
  w.field("performance_state", h.performance_state);
  w.key("clock_events");
  if (h.throttle) {
    w.begin_array();
    for (const auto& r : h.throttle->active())
      w.value(r);
    w.end_array();
  } else {
    w.null();
  }
  w.field("pcie_generation", h.pcie_generation);
  w.field("pcie_width", h.pcie_width);
  w.field("pcie_max_generation", h.pcie_max_generation);
  w.field("pcie_max_width", h.pcie_max_width);
  const auto tx = h.pcie_tx_bytes_per_s ? h.pcie_tx_bytes_per_s : h.gpm_pcie_tx_bytes_per_s;
  const auto rx = h.pcie_rx_bytes_per_s ? h.pcie_rx_bytes_per_s : h.gpm_pcie_rx_bytes_per_s;
  w.field("pcie_tx_bytes_per_s", rate(tx));
  w.field("pcie_rx_bytes_per_s", rate(rx));
  w.field("pcie_replays", h.pcie_replays);
  w.field("nvlink_tx_bytes_per_s", rate(h.nvlink_tx_bytes_per_s));
  w.field("nvlink_rx_bytes_per_s", rate(h.nvlink_rx_bytes_per_s));
  w.field("nvlink_crc_flit_errors", h.nvlink_crc_flit_errors);
  w.field("nvlink_crc_data_errors", h.nvlink_crc_data_errors);
  w.field("nvlink_replay_errors", h.nvlink_replay_errors);
  w.field("nvlink_recovery_errors", h.nvlink_recovery_errors);
  // The links the GPU has, and which of them are down; null where it has none known.
  if (h.nvlink_links.empty()) {
    w.field("nvlink_links", std::optional<unsigned>{});
    w.key("nvlink_links_down").null();
  } else {
    w.field("nvlink_links", static_cast<unsigned>(h.nvlink_links.size()));
    w.key("nvlink_links_down").begin_array();
    for (const nvlink_state& l : h.nvlink_links) {
      if (!l.active) w.value(l.link);
    }
    w.end_array();
  }
  // The links with errors, where each link's counts were read (once the GPU has errors).
  if (std::none_of(h.nvlink_links.begin(), h.nvlink_links.end(),
                   [](const nvlink_state& l) { return l.errors_known(); })) {
    w.key("nvlink_links_with_errors").null();
  } else {
    w.key("nvlink_links_with_errors").begin_array();
    for (const nvlink_state& l : h.nvlink_links) {
      if (l.errors() > 0) w.value(l.link);
    }
    w.end_array();
  }
  w.field("persistence_mode", h.persistence_mode);
  w.field("default_power_limit_w", rounded(default_limit_of(d), 3));
  w.field("ecc_enabled", h.ecc_enabled);
  w.field("ecc_uncorrected_volatile", h.ecc_uncorrected_volatile);
  w.field("ecc_corrected_volatile", h.ecc_corrected_volatile);
  w.field("ecc_uncorrected_aggregate", h.ecc_uncorrected_aggregate);
  w.field("ecc_corrected_aggregate", h.ecc_corrected_aggregate);
  w.field("retired_pages_single_bit", h.retired_pages_single_bit);
  w.field("retired_pages_double_bit", h.retired_pages_double_bit);
  w.field("retirement_pending", h.retirement_pending);
  w.field("remapped_rows_corrected", h.remapped_rows_corrected);
  w.field("remapped_rows_uncorrected", h.remapped_rows_uncorrected);
  w.field("remap_pending", h.remap_pending);
  w.field("remap_failure", h.remap_failure);
  // XIDs since monitor started watching, by number; null where the driver reports none.
  w.field("last_xid", h.last_xid);
  w.key("xid_errors");
  if (h.xid_known) {
    w.begin_object();
    for (const xid_count& c : h.xid_counts)
      w.field(std::to_string(c.xid), c.count);
    w.end_object();
  } else {
    w.null();
  }
  w.key("findings").begin_array();
  if (d.now.health || d.now.lost) {
    for (const auto& f : health::health_findings(d.info, h, d.now.lost)) {
      if (f.level == health::severity::info) continue;
      w.begin_object()
          .field("severity", health::to_string(f.level))
          .field("code", f.code)
          .end_object();
    }
  }
  w.end_array();
}

}  // namespace

std::string watts_text(std::optional<double> w) {
  if (!w) return "-";
  if (std::fabs(*w) < 10.0) return fmt::format("{:.1f} W", *w);
  return fmt::format("{:.0f} W", *w);
}

std::string energy_text(std::optional<double> j) {
  if (!j) return "-";
  const double v = *j;
  if (v < 1e3) return fmt::format("{:.1f} J", v);
  if (v < 1e6) return fmt::format("{:.2f} kJ", v / 1e3);
  if (v < 1e9) return fmt::format("{:.2f} MJ", v / 1e6);
  return fmt::format("{:.2f} GJ", v / 1e9);
}

std::string bytes_text(std::optional<std::uint64_t> b) {
  if (!b) return "-";
  const auto v = static_cast<double>(*b);
  constexpr double kKi = 1024.0;
  if (v < kKi * kKi) return fmt::format("{:.0f} KiB", v / kKi);
  if (v < kKi * kKi * kKi) return fmt::format("{:.0f} MiB", v / (kKi * kKi));
  return fmt::format("{:.1f} GiB", v / (kKi * kKi * kKi));
}

std::string rate_text(std::optional<double> bytes_per_s) {
  if (!bytes_per_s) return "-";
  const double v = *bytes_per_s;
  if (v < 1e6) return fmt::format("{:.0f} kB/s", v / 1e3);
  if (v < 1e9) return fmt::format("{:.0f} MB/s", v / 1e6);
  return fmt::format("{:.1f} GB/s", v / 1e9);
}

std::string duration_text(double s) {
  const auto total = static_cast<long long>(std::max(0.0, s));
  const long long h = total / 3600;
  const long long m = (total % 3600) / 60;
  const long long sec = total % 60;
  if (h > 0) return fmt::format("{}h{:02}m", h, m);
  if (m > 0) return fmt::format("{}m{:02}s", m, sec);
  return fmt::format("{}s", sec);
}

std::string throttle_text(const std::optional<clock_events>& e) {
  if (!e) return "-";
  std::string out;
  for (auto name : e->active()) {
    for (char& c : name) {
      if (c == '_') c = ' ';
    }
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out.empty() ? "none" : out;
}

std::string fit(std::string_view line, std::size_t width) {
  std::string out;
  std::size_t cells = 0;
  bool styled = false;
  for (std::size_t i = 0; i < line.size();) {
    const auto c = static_cast<unsigned char>(line[i]);
    if (c == 0x1b) {
      // CSI sequence: ESC [ parameters final-byte; takes no cell.
      std::size_t j = i + 1;
      if (j < line.size() && line[j] == '[') {
        ++j;
        while (j < line.size() && (line[j] < 0x40 || line[j] > 0x7e))
          ++j;
      }
      const std::string_view seq = line.substr(i, std::min(line.size(), j + 1) - i);
      out += seq;
      styled = seq != "\x1b[0m";
      i = j + 1;
      continue;
    }
    // One code point: a lead byte and its continuation bytes.
    std::size_t len = 1;
    if (c >= 0xF0) {
      len = 4;
    } else if (c >= 0xE0) {
      len = 3;
    } else if (c >= 0xC0) {
      len = 2;
    }
    if (cells == width) break;
    out += line.substr(i, len);
    ++cells;
    i += len;
  }
  if (styled) out += "\x1b[0m";
  return out;
}

std::size_t cells(std::string_view text) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == 0x1b && i + 1 < text.size() && text[i + 1] == '[') {
      i += 2;
      while (i < text.size() && (text[i] < 0x40 || text[i] > 0x7e))
        ++i;
      continue;
    }
    if ((c & 0xC0) != 0x80) ++n;  // not a continuation byte
  }
  return n;
}

std::optional<double> rounded(std::optional<double> v, int decimals) {
  if (!v || !std::isfinite(*v)) return v;
  const double scale = std::pow(10.0, decimals);
  const double r = std::round(*v * scale) / scale;
  return r == 0.0 ? 0.0 : r;  // no "-0"
}

std::string stale_text(const screen_model& m) {
  if (!m.stale || !m.readings_age_s) return {};
  return fmt::format("readings {:.0f} s old{}: the driver is not answering",
                     std::floor(*m.readings_age_s),
                     m.readings_clock.empty() ? "" : fmt::format(" (from {})", m.readings_clock));
}

std::string inference_text(const inference_row& r) {
  if (!r.problem.empty()) return "no counts: " + r.problem;
  if (!r.output_tokens_per_s && !r.energy_per_output_token_j) return "no token counted yet";
  std::string out = r.energy_per_output_token_j
                        ? fmt::format("{:.3g} J/token", *r.energy_per_output_token_j)
                        : std::string("- J/token");
  out += fmt::format(" · {} tok/s", or_dash(r.output_tokens_per_s, "{:.0f}"));
  if (r.idle_energy_ratio) out += fmt::format(" · idle {:.0f} %", *r.idle_energy_ratio * 100.0);
  if (r.power_w) out += fmt::format(" · {:.0f} W", *r.power_w);
  out += r.estimated ? " (1 min, estimated)" : " (1 min)";
  return out;
}

std::string plain_inference_lines(const screen_model& m) {
  std::string out;
  for (const auto& r : m.inference) {
    out += fmt::format("# tokens {}: {}\n", text::escape_for_terminal(r.source),
                       text::escape_for_terminal(inference_text(r)));
  }
  return out;
}

std::string plain_stale_line(const screen_model& m) {
  const std::string t = stale_text(m);
  return t.empty() ? t : fmt::format("# {}\n", t);
}

std::string plain_header() {
  return fmt::format(
      "# {:<27} {:>6} {:>5} {:>7} {:>6} {:>11} {:>4} {:>4} {:>4} {:>6} {:>7} {:>6} {:>7} "
      "{:>5} {:<14} {}\n",
      "time", "age_s", "dev", "pwr_w", "lim_w", "energy_j", "gpu%", "sm%", "mem%", "temp_c",
      "mtemp_c", "sm_mhz", "mem_mhz", "pcie", "throttle", "health");
}

std::string plain_line(std::string_view time, std::optional<double> age_s, const device_view& d) {
  const health_reading empty;
  const health_reading& h = d.now.health ? *d.now.health : empty;
  const auto lim = limit_of(d);
  std::string throttle = "-";
  if (h.throttle) {
    const auto active = h.throttle->active();
    throttle = active.empty() ? "none" : fmt::format("{}", fmt::join(active, ","));
  }
  std::string flags;
  if (d.now.health || d.now.lost) {
    for (const auto& f : health::health_findings(d.info, h, d.now.lost)) {
      if (f.level == health::severity::info) continue;
      if (!flags.empty()) flags += ',';
      flags += f.code;
    }
  }
  if (flags.empty()) flags = d.now.health || d.info.kind != device_kind::gpu ? "ok" : "-";
  std::string pcie = "-";
  if (h.pcie_generation && h.pcie_width)
    pcie = fmt::format("{}x{}", *h.pcie_generation, *h.pcie_width);
  std::string sm = "-";
  if (h.sm_activity_percent) sm = fmt::format("{:.0f}", *h.sm_activity_percent);
  return fmt::format(
      "  {:<27} {:>6} {:>5} {:>7} {:>6} {:>11} {:>4} {:>4} {:>4} {:>6} {:>7} {:>6} {:>7} "
      "{:>5} {:<14} {}\n",
      time, or_dash(age_s, "{:.1f}"), short_device_label(d.info), or_dash(d.now.power_w, "{:.1f}"),
      or_dash(lim, "{:.0f}"), or_dash(d.now.energy_j, "{:.1f}"), or_dash(h.gpu_util_percent), sm,
      or_dash(h.memory_util_percent), or_dash(h.temperature_c, "{:.0f}"),
      or_dash(h.memory_temperature_c, "{:.0f}"), or_dash(h.sm_clock_mhz),
      or_dash(h.memory_clock_mhz), pcie, throttle, flags);
}

std::string json_sample(const screen_model& m, std::string_view iso_time) {
  json_writer w;
  w.begin_object()
      .field("type", "monitor_sample")
      .field("schema_version", 1)
      .field("time", iso_time)
      .field("hostname", m.host)
      .field("monotonic_s", *rounded(m.now_s, 6))
      .field("elapsed_s", *rounded(m.elapsed_s, 3))
      .field("readings_age_s", rounded(m.readings_age_s, 3))
      .field("stale", m.stale);
  std::optional<double> node_w;
  std::optional<double> node_j;
  auto add = [](std::optional<double>& sum, const std::optional<double>& v) {
    if (v) sum = sum.value_or(0.0) + *v;
  };
  for (const auto* list : {&m.gpus, &m.host_devices}) {
    for (const auto& d : *list) {
      add(node_w, d.now.power_w);
      add(node_j, d.now.energy_j);
    }
  }
  w.key("node")
      .begin_object()
      .field("power_w", rounded(node_w, 3))
      .field("energy_j", rounded(node_j, 3));
  w.key("lost_gpus").begin_array();
  for (const auto& d : m.gpus) {
    if (d.now.lost) w.value(d.info.index);
  }
  w.end_array().end_object();
  w.key("devices").begin_array();
  for (const auto* list : {&m.gpus, &m.host_devices}) {
    for (const auto& d : *list) {
      w.begin_object()
          .field("kind", to_string(d.info.kind))
          .field("index", d.info.index)
          .field("vendor", d.info.vendor.empty() ? std::optional<std::string>()
                                                 : std::optional(d.info.vendor))
          .field("uuid", d.info.key())
          .field("name", d.info.name)
          .field("method", to_string(d.info.method()))
          .field("lost", d.now.lost)
          .field("power_w", rounded(d.now.power_w, 3))
          .field("power_limit_w", rounded(limit_of(d), 3))
          .field("energy_j", rounded(d.now.energy_j, 3));
      if (d.info.kind == device_kind::gpu) {
        write_health(w, d);
        w.key("processes");
        if (d.now.health && d.now.health->processes_known) {
          w.begin_array();
          for (const auto& p : m.processes) {
            if (p.gpu != d.info.index) continue;
            w.begin_object().field("pid", p.pid);
            w.key("user");
            if (p.user.empty()) {
              w.null();
            } else {
              w.value(p.user);
            }
            w.key("command");
            if (p.command.empty()) {
              w.null();
            } else {
              w.value(p.command);
            }
            w.field("used_memory_bytes", p.memory_bytes).field("graphics", p.graphics);
            w.field("sm_util_percent", rounded(p.sm_util_percent, 1)).end_object();
          }
          w.end_array();
        } else {
          w.null();
        }
      }
      w.end_object();
    }
  }
  w.end_array();
  if (!m.inference.empty()) {
    w.key("inference").begin_array();
    for (const auto& r : m.inference) {
      w.begin_object()
          .field("source", r.source)
          .field("estimated", r.estimated)
          .field("problem", r.problem.empty() ? std::optional<std::string>() : r.problem)
          .field("energy_per_output_token_j", rounded(r.energy_per_output_token_j, 6))
          .field("output_tokens_per_s", rounded(r.output_tokens_per_s, 3))
          .field("idle_energy_ratio", rounded(r.idle_energy_ratio, 4))
          .field("power_w", rounded(r.power_w, 3))
          .end_object();
    }
    w.end_array();
  }
  w.end_object();
  return w.take() + "\n";
}

}  // namespace joules::monitor
