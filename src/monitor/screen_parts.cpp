#include "monitor/screen_parts.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "health/findings.hpp"
#include "health/xid.hpp"
#include "text/escape.hpp"

namespace joules::monitor {
namespace {

std::string_view load_color(double fraction) {
  if (fraction >= 0.9) return kRed;
  if (fraction >= 0.6) return kYellow;
  return kGreen;
}

}  // namespace

std::string clock_pair(const std::optional<unsigned>& now, const std::optional<unsigned>& max) {
  if (!now) return "-";
  return max ? fmt::format("{}/{}", *now, *max) : fmt::format("{}", *now);
}

// The active clock-event reasons, one item each: "power cap", "sw thermal"; "none", "-".
items throttle_reasons(const device_view& d, const painter& paint) {
  if (!d.now.health || !d.now.health->throttle) return {"-"};
  items out;
  for (auto name : d.now.health->throttle->active()) {
    std::replace(name.begin(), name.end(), '_', ' ');
    out.push_back(name == "idle" ? name : paint(name, kYellow));
  }
  if (out.empty()) out.emplace_back("none");
  return out;
}

std::string lost_mark(const device_view& d, const painter& paint) {
  return d.now.lost ? paint("LOST", kAlert) : std::string();
}

std::string watts_pair(const device_view& d) {
  return fmt::format("{} / {}", watts_text(d.now.power_w), watts_text(limit_of(d)));
}

std::string memory_text(const health_reading& h) {
  std::string s =
      fmt::format("{} / {}", bytes_text(h.memory_used_bytes), bytes_text(h.memory_total_bytes));
  if (h.memory_reserved_bytes.value_or(0) > 0)
    s += fmt::format(" ({} reserved)", bytes_text(h.memory_reserved_bytes));
  return s;
}

std::string pcie_text(const health_reading& h) {
  if (!h.pcie_generation || !h.pcie_width) return {};
  std::string s = fmt::format("pcie gen{} x{}", *h.pcie_generation, *h.pcie_width);
  if (h.pcie_max_generation && h.pcie_max_width &&
      (*h.pcie_max_generation != *h.pcie_generation || *h.pcie_max_width != *h.pcie_width)) {
    s += fmt::format(" (max gen{} x{})", *h.pcie_max_generation, *h.pcie_max_width);
  }
  return s;
}

std::string pcie_rates(const health_reading& h) {
  const auto tx = h.pcie_tx_bytes_per_s ? h.pcie_tx_bytes_per_s : h.gpm_pcie_tx_bytes_per_s;
  const auto rx = h.pcie_rx_bytes_per_s ? h.pcie_rx_bytes_per_s : h.gpm_pcie_rx_bytes_per_s;
  if (!tx && !rx) return {};
  return fmt::format("tx {} rx {}", rate_text(tx), rate_text(rx));
}

std::string nvlink_text(const health_reading& h) {
  if (h.nvlink_tx_bytes_per_s.value_or(0.0) <= 0.0 && h.nvlink_rx_bytes_per_s.value_or(0.0) <= 0.0)
    return {};
  return fmt::format("nvlink tx {} rx {}", rate_text(h.nvlink_tx_bytes_per_s),
                     rate_text(h.nvlink_rx_bytes_per_s));
}

// "nvlink 17/18 up" where the GPU has links.
std::string nvlink_links_text(const health_reading& h) {
  if (h.nvlink_links.empty()) return {};
  const auto up = std::count_if(h.nvlink_links.begin(), h.nvlink_links.end(),
                                [](const nvlink_state& l) { return l.active; });
  return fmt::format("nvlink {}/{} up", up, h.nvlink_links.size());
}

items use_items(const health_reading& h) {
  items v = {
      percent("gpu", h.gpu_util_percent),           percent("mem-bw", h.memory_util_percent),
      percent("sm", h.sm_activity_percent),         percent("occupancy", h.sm_occupancy_percent),
      percent("tensor", h.tensor_activity_percent), percent("dram", h.dram_bandwidth_percent),
      percent("enc", h.encoder_util_percent),       percent("dec", h.decoder_util_percent)};
  if (std::all_of(v.begin(), v.end(), [](const auto& s) { return s.empty(); })) return {"-"};
  return v;
}

// The sparkline with its span and peak: " 60 s     ▁▂▃…  peak 695 W".
std::string spark_line(const screen_model& m, const device_view& d, std::size_t width,
                       std::size_t indent, const painter& paint) {
  const auto peak =
      d.power_history != nullptr ? d.power_history->peak(m.now_s, kSparkSpanS) : std::nullopt;
  const std::string tail = fmt::format("  peak {}", watts_text(peak));
  const std::string lead = fmt::format(" {:<{}}", fmt::format("{:.0f} s", kSparkSpanS), indent - 1);
  const std::size_t columns =
      width > indent + tail.size() + 1 ? width - indent - tail.size() - 1 : 0;
  return lead + paint(spark(d, m.now_s, columns, kSparkSpanS), kCyan) + tail;
}

std::string ellipsized(const std::string& line, std::size_t width) {
  if (width == 0 || cells(line) <= width) return line;
  return fit(line, width - 1) + "…";
}

std::string shown(std::string_view outside) {
  return text::escape_for_terminal(outside);
}

std::optional<double> limit_of(const device_view& d) {
  if (d.now.health && d.now.health->power_limit_w) return d.now.health->power_limit_w;
  if (d.info.power_limit) return d.info.power_limit->value;
  return std::nullopt;
}

std::string label(std::string_view name) {
  return fmt::format(" {:<{}}", name, kLabel - 1);
}

std::string percent(std::string_view name, const std::optional<double>& v) {
  if (!v) return {};
  return fmt::format("{} {:.0f}%", name, *v);
}

std::string percent(std::string_view name, const std::optional<unsigned>& v) {
  if (!v) return {};
  return fmt::format("{} {}%", name, *v);
}

std::string celsius(const std::optional<double>& c) {
  return c ? fmt::format("{:.0f}°C", *c) : "-";
}

std::string gpu_title(const device_view& d, const painter& paint) {
  return paint(gpu_name(d.info), kBold);
}

std::string power_bar(const device_view& d, std::size_t width, const painter& paint) {
  const auto limit = limit_of(d);
  if (!limit || !d.now.power_w || *limit <= 0.0) return std::string(width, ' ');
  const double f = *d.now.power_w / *limit;
  return paint(bar(f, width), load_color(f));
}

items health_flags(const device_view& d, const painter& paint) {
  if (!d.now.health && !d.now.lost) return {paint("-", kDim)};
  const health_reading empty;
  items out;
  for (const auto& f :
       health::health_findings(d.info, d.now.health ? *d.now.health : empty, d.now.lost)) {
    if (f.level == health::severity::info || f.flag.empty()) continue;
    out.push_back(paint(f.flag, f.level == health::severity::critical ? kRed : kYellow));
  }
  if (out.empty()) out.push_back(paint("ok", kGreen));
  return out;
}

items xid_items(const health_reading& h, const painter& paint) {
  if (!h.last_xid) return {"-"};
  const health::xid_meaning* m = health::xid_lookup(*h.last_xid);
  const bool critical = health::xid_severity(*h.last_xid) == health::severity::critical;
  std::string last = fmt::format("last {}", *h.last_xid);
  if (m != nullptr) last += fmt::format(" ({})", m->description);
  std::uint64_t all = 0;
  for (const xid_count& c : h.xid_counts)
    all += c.count;
  return {paint(last, critical ? kRed : kYellow),
          fmt::format("{} XID{} since start", all, all == 1 ? "" : "s")};
}

bool has_problems(const device_view& d) {
  if (d.now.lost) return true;
  if (!d.now.health) return false;
  const auto f = health::health_findings(d.info, *d.now.health, false);
  return std::any_of(f.begin(), f.end(),
                     [](const auto& x) { return x.level != health::severity::info; });
}

std::string spark(const device_view& d, double now_s, std::size_t columns, double span_s) {
  if (d.power_history == nullptr || columns == 0) return {};
  double scale = limit_of(d).value_or(0.0);
  if (!(scale > 0.0)) scale = d.power_history->peak().value_or(0.0);
  return sparkline(d.power_history->buckets(now_s, columns, span_s), scale);
}

lines header(const screen_model& m, std::size_t width, const painter& paint, bool paused) {
  lines out;
  items title = {shown(m.host), shown(m.source),
                 fmt::format("every {:g} ms", m.interval_s * 1000.0), m.clock};
  // "paused" next to the name, where it is seen first.
  const std::string lead =
      paint("joules monitor", kBold) + "  " + (paused ? paint("paused", kReverse) + "  " : "");
  flow(out, lead, title, " · ", width, 2);
  if (m.stale) out.push_back(paint(stale_text(m), kAlert));
  std::optional<double> watts;
  std::optional<double> joules;
  for (const auto* list : {&m.gpus, &m.host_devices}) {
    for (const auto& d : *list) {
      if (d.now.power_w) watts = watts.value_or(0.0) + *d.now.power_w;
      if (d.now.energy_j) joules = joules.value_or(0.0) + *d.now.energy_j;
    }
  }
  const std::string wh = joules ? fmt::format(" ({:.2f} Wh)", *joules / 3600.0) : "";
  const std::size_t lost = static_cast<std::size_t>(
      std::count_if(m.gpus.begin(), m.gpus.end(), [](const auto& d) { return d.now.lost; }));
  flow(out, paint("node", kBold) + "  ",
       {fmt::format("{} now", watts_text(watts)),
        fmt::format("{}{} in {}", energy_text(joules), wh, duration_text(m.elapsed_s)),
        fmt::format("{} GPU{}{}", m.gpus.size(), m.gpus.size() == 1 ? "" : "s",
                    m.host_devices.empty() ? "" : " + CPU/DRAM"),
        lost > 0 ? paint(fmt::format("{} lost", lost), kAlert) : ""},
       "  ·  ", width, 2);
  // CPU packages and DRAM, measured through RAPL (src/backends/rapl) when the backend has them.
  for (const auto& d : m.host_devices) {
    flow(out, paint(fmt::format("{:<5}", to_string(d.info.kind)), kBold) + "  ",
         {fmt::format("{}  {} now", shown(d.info.name), watts_text(d.now.power_w)),
          fmt::format("{} ({})", energy_text(d.now.energy_j), to_string(d.info.method()))},
         "  ·  ", width, 6);
  }
  // Inference servers (--tokens-from): joules per token of their GPUs.
  for (const auto& r : m.inference) {
    flow(out, paint("tokens", kBold) + "  ",
         {shown(r.source),
          r.problem.empty() ? shown(inference_text(r)) : paint(shown(inference_text(r)), kAlert)},
         "  ·  ", width, 8);
  }
  out.emplace_back();
  return out;
}

void full_block(lines& out, const screen_model& m, const device_view& d, std::size_t width,
                const painter& paint, bool spark) {
  const health_reading empty;
  const health_reading& h = d.now.health ? *d.now.health : empty;
  const std::size_t bar_width = std::clamp<std::size_t>(width > 64 ? width - 64 : 10, 10, 40);
  flow(out, gpu_title(d, paint),
       {shown(d.info.name), paint(shown(d.info.pci_bus_id), kDim), paint(shown(d.info.uuid), kDim),
        lost_mark(d, paint)},
       "  ", width, kLabel);
  flow(out, label("power"),
       parts{{power_bar(d, bar_width, paint)},
             {watts_pair(d)},
             {fmt::format("energy {} since start ({})", energy_text(d.now.energy_j),
                          to_string(d.info.method())),
              "   "}},
       width, kLabel);
  flow(out, label("use"), use_items(h), "  ", width, kLabel);
  std::string temps =
      fmt::format("temp {}  mem {}", celsius(h.temperature_c), celsius(h.memory_temperature_c));
  if (h.slowdown_temperature_c)
    temps += fmt::format(" (slowdown {})", celsius(h.slowdown_temperature_c));
  flow(out, label("memory"),
       {memory_text(h), temps, h.fan_percent ? fmt::format("fan {}%", *h.fan_percent) : "",
        h.performance_state ? fmt::format("P{}", *h.performance_state) : ""},
       "   ", width, kLabel);
  flow(out, label("clocks"),
       {fmt::format("sm {} MHz", clock_pair(h.sm_clock_mhz, h.max_sm_clock_mhz)),
        fmt::format("mem {} MHz", clock_pair(h.memory_clock_mhz, h.max_memory_clock_mhz))},
       "   ", width, kLabel);
  items links = {pcie_text(h), pcie_rates(h), nvlink_text(h), nvlink_links_text(h)};
  if (std::any_of(links.begin(), links.end(), [](const auto& s) { return !s.empty(); }))
    flow(out, label("links"), links, "   ", width, kLabel);
  flow(out, label("throttle"), group("", throttle_reasons(d, paint), ""), width, kLabel);
  flow(out, label("health"), group("", health_flags(d, paint), ""), width, kLabel);
  if (h.last_xid) flow(out, label("xid"), xid_items(h, paint), "  ·  ", width, kLabel);
  if (!spark) return;
  out.push_back(spark_line(m, d, width, kLabel, paint));
  out.emplace_back();
}

void process_table(lines& out, const std::vector<const process_row*>& rows, std::size_t room,
                   std::size_t width, const painter& paint) {
  if (room == 0) return;
  out.push_back(
      paint(fmt::format("{:>7} {:<10} {:>3} {:>9} {:>4} {:>6} {:>6} {:>10}  {}", "PID", "USER",
                        "GPU", "MEMORY", "SM%", "SHARE", "POWER", "ENERGY", "COMMAND"),
            kBold));
  const std::size_t fit_rows = std::min(room - 1, rows.size());
  for (std::size_t i = 0; i < fit_rows; ++i) {
    if (i + 1 == fit_rows && fit_rows < rows.size()) {
      out.push_back(paint(fmt::format("  … {} more processes", rows.size() - i), kDim));
      break;
    }
    const process_row& p = *rows[i];
    std::string user = p.user.empty() ? "?" : shown(p.user);
    if (cells(user) > 10) user = fit(user, 9) + "…";
    out.push_back(ellipsized(
        fmt::format("{:>7} {:<10} {:>3} {:>9} {:>4} {:>6} {:>6} {:>10}  {}{}", p.pid, user, p.gpu,
                    bytes_text(p.memory_bytes),
                    p.sm_util_percent ? fmt::format("{:.0f}", *p.sm_util_percent) : "-",
                    p.share ? fmt::format("{:.0f}%", *p.share * 100.0) : "-", watts_text(p.power_w),
                    energy_text(p.energy_j), p.command.empty() ? "?" : shown(p.command),
                    p.graphics ? " (graphics)" : ""),
        width));
  }
}

}  // namespace joules::monitor
