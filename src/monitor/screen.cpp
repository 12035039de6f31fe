// The full-screen view of `joules monitor`: a header with the node's totals, one block per GPU
// (as detailed as the terminal's height allows), the CPU/DRAM rows when RAPL domains are
// measured, and the processes on the GPUs.

#include <fmt/format.h>

#include <algorithm>

#include "health/findings.hpp"
#include "monitor/view.hpp"

namespace joules::monitor {
namespace {

enum class detail { full, compact, minimal };
constexpr std::size_t kFullLines = 8;     // 7 lines and a blank one
constexpr std::size_t kCompactLines = 3;  // 3 lines

// ANSI SGR codes, used only when colour is on (a terminal, NO_COLOR unset).
constexpr std::string_view kBold = "1";
constexpr std::string_view kDim = "2";
constexpr std::string_view kRed = "31";
constexpr std::string_view kGreen = "32";
constexpr std::string_view kYellow = "33";
constexpr std::string_view kCyan = "36";

struct painter {
  bool color;
  std::string operator()(std::string_view text, std::string_view sgr) const {
    if (!color || text.empty()) return std::string(text);
    return fmt::format("\x1b[{}m{}\x1b[0m", sgr, text);
  }
};

std::optional<double> limit_of(const device_view& d) {
  if (d.now.health && d.now.health->power_limit_w) return d.now.health->power_limit_w;
  if (d.info.power_limit) return d.info.power_limit->value;
  return std::nullopt;
}

std::string_view load_color(double fraction) {
  if (fraction >= 0.9) return kRed;
  if (fraction >= 0.6) return kYellow;
  return kGreen;
}

std::string power_bar(const device_view& d, std::size_t width, const painter& paint) {
  const auto limit = limit_of(d);
  if (!limit || !d.now.power_w || *limit <= 0.0) return std::string(width, ' ');
  const double f = *d.now.power_w / *limit;
  return paint(bar(f, width), load_color(f));
}

std::string percent(std::string_view name, const std::optional<double>& v) {
  if (!v) return {};
  return fmt::format("  {} {:.0f}%", name, *v);
}

std::string percent(std::string_view name, const std::optional<unsigned>& v) {
  if (!v) return {};
  return fmt::format("  {} {}%", name, *v);
}

std::string celsius(const std::optional<double>& c) {
  return c ? fmt::format("{:.0f}°C", *c) : "-";
}

std::string clock_pair(const std::optional<unsigned>& now, const std::optional<unsigned>& max) {
  if (!now) return "-";
  return max ? fmt::format("{}/{}", *now, *max) : fmt::format("{}", *now);
}

// The health line: "ok", or the warnings and critical findings' flags in colour.
std::string health_flags(const device_view& d, const painter& paint) {
  if (!d.now.health && !d.now.lost) return paint("-", kDim);
  const health_reading empty;
  std::string out;
  for (const auto& f :
       health::health_findings(d.info, d.now.health ? *d.now.health : empty, d.now.lost)) {
    if (f.level == health::severity::info || f.flag.empty()) continue;
    if (!out.empty()) out += ", ";
    out += paint(f.flag, f.level == health::severity::critical ? kRed : kYellow);
  }
  return out.empty() ? paint("ok", kGreen) : out;
}

std::string throttle_flags(const device_view& d, const painter& paint) {
  if (!d.now.health) return "-";
  const std::string t = throttle_text(d.now.health->throttle);
  if (t == "none" || t == "idle" || t == "-") return t;
  return paint(t, kYellow);
}

std::string spark(const device_view& d, double now_s, std::size_t columns) {
  if (d.history == nullptr || columns == 0) return {};
  double scale = limit_of(d).value_or(0.0);
  if (!(scale > 0.0)) scale = d.history->peak().value_or(0.0);
  return sparkline(d.history->buckets(now_s, columns), scale);
}

std::string gpu_title(const device_view& d, const painter& paint, bool long_form) {
  std::string s = paint(fmt::format("GPU {}", d.info.index), kBold);
  s += "  " + d.info.name;
  if (long_form) s += "  " + paint(d.info.pci_bus_id + "  " + d.info.uuid, kDim);
  if (d.now.lost) s += "  " + paint("LOST", kRed);
  return s;
}

std::string energy_part(const device_view& d) {
  return fmt::format("{} ({})", energy_text(d.now.energy_j), to_string(d.info.method()));
}

void full_block(std::vector<std::string>& out, const screen_model& m, const device_view& d,
                std::size_t width, const painter& paint) {
  const health_reading empty;
  const health_reading& h = d.now.health ? *d.now.health : empty;
  const std::size_t bar_width = std::clamp<std::size_t>(width > 64 ? width - 64 : 10, 10, 40);
  out.push_back(gpu_title(d, paint, true));
  out.push_back(fmt::format(" power  {}  {} / {}   energy {} since start ({})",
                            power_bar(d, bar_width, paint), watts_text(d.now.power_w),
                            watts_text(limit_of(d)), energy_text(d.now.energy_j),
                            to_string(d.info.method())));
  std::string use = fmt::format(
      " use   {}{}{}{}{}{}", percent("gpu", h.gpu_util_percent),
      percent("mem-bw", h.memory_util_percent), percent("sm", h.sm_activity_percent),
      percent("occupancy", h.sm_occupancy_percent), percent("tensor", h.tensor_activity_percent),
      percent("dram", h.dram_bandwidth_percent));
  out.push_back(use == " use   " ? " use    -" : use);
  std::string mem = fmt::format(" memory {} / {}   temp {}  mem {}",
                                bytes_text(h.memory_used_bytes), bytes_text(h.memory_total_bytes),
                                celsius(h.temperature_c), celsius(h.memory_temperature_c));
  if (h.slowdown_temperature_c)
    mem += fmt::format(" (slowdown {})", celsius(h.slowdown_temperature_c));
  if (h.fan_percent) mem += fmt::format("   fan {}%", *h.fan_percent);
  if (h.performance_state) mem += fmt::format("   P{}", *h.performance_state);
  out.push_back(mem);
  std::string clocks =
      fmt::format(" clocks sm {} MHz  mem {} MHz", clock_pair(h.sm_clock_mhz, h.max_sm_clock_mhz),
                  clock_pair(h.memory_clock_mhz, h.max_memory_clock_mhz));
  if (h.pcie_generation && h.pcie_width) {
    clocks += fmt::format("   pcie gen{} x{}", *h.pcie_generation, *h.pcie_width);
    if (h.pcie_max_generation && h.pcie_max_width)
      clocks += fmt::format(" (max gen{} x{})", *h.pcie_max_generation, *h.pcie_max_width);
  }
  const auto tx = h.pcie_tx_bytes_per_s ? h.pcie_tx_bytes_per_s : h.gpm_pcie_tx_bytes_per_s;
  const auto rx = h.pcie_rx_bytes_per_s ? h.pcie_rx_bytes_per_s : h.gpm_pcie_rx_bytes_per_s;
  if (tx || rx) clocks += fmt::format(" tx {} rx {}", rate_text(tx), rate_text(rx));
  if (h.nvlink_tx_bytes_per_s.value_or(0.0) > 0.0 || h.nvlink_rx_bytes_per_s.value_or(0.0) > 0.0) {
    clocks += fmt::format("   nvlink tx {} rx {}", rate_text(h.nvlink_tx_bytes_per_s),
                          rate_text(h.nvlink_rx_bytes_per_s));
  }
  out.push_back(clocks);
  out.push_back(
      fmt::format(" throttle {}   health {}", throttle_flags(d, paint), health_flags(d, paint)));
  const auto peak = d.history != nullptr ? d.history->peak() : std::nullopt;
  const std::string tail = fmt::format("  peak {}", watts_text(peak));
  const std::size_t prefix = 8;  // " 60 s   "
  const std::size_t columns =
      width > prefix + tail.size() + 1 ? width - prefix - tail.size() - 1 : 0;
  const double span = d.history != nullptr ? d.history->span_s() : 60.0;
  out.push_back(
      fmt::format(" {:>2.0f} s   {}{}", span, paint(spark(d, m.now_s, columns), kCyan), tail));
  out.emplace_back();
}

void compact_block(std::vector<std::string>& out, const screen_model& m, const device_view& d,
                   std::size_t width, const painter& paint) {
  const health_reading empty;
  const health_reading& h = d.now.health ? *d.now.health : empty;
  out.push_back(fmt::format(
      "{}  {} {} / {}  {}{}{}{}  {}", gpu_title(d, paint, false), power_bar(d, 12, paint),
      watts_text(d.now.power_w), watts_text(limit_of(d)), energy_text(d.now.energy_j),
      percent("gpu", h.gpu_util_percent), percent("sm", h.sm_activity_percent),
      percent("tensor", h.tensor_activity_percent), celsius(h.temperature_c)));
  out.push_back(fmt::format("      mem {} / {}  sm {} MHz  throttle {}  health {}",
                            bytes_text(h.memory_used_bytes), bytes_text(h.memory_total_bytes),
                            clock_pair(h.sm_clock_mhz, h.max_sm_clock_mhz),
                            throttle_flags(d, paint), health_flags(d, paint)));
  out.push_back("      " + paint(spark(d, m.now_s, width > 8 ? width - 8 : 0), kCyan));
}

void minimal_line(std::vector<std::string>& out, const device_view& d, const painter& paint) {
  const health_reading empty;
  const health_reading& h = d.now.health ? *d.now.health : empty;
  out.push_back(fmt::format(
      "{} {} {} / {}  {}{}  {}  {}  {}", paint(fmt::format("GPU {:<2}", d.info.index), kBold),
      power_bar(d, 10, paint), watts_text(d.now.power_w), watts_text(limit_of(d)),
      energy_text(d.now.energy_j), percent("gpu", h.gpu_util_percent), celsius(h.temperature_c),
      throttle_flags(d, paint), health_flags(d, paint)));
}

std::vector<std::string> header(const screen_model& m, const painter& paint) {
  std::vector<std::string> out;
  out.push_back(fmt::format("{}  {}  ·  {}  ·  every {:g} ms  ·  {}  ·  {}",
                            paint("joules monitor", kBold), m.host, m.source, m.interval_s * 1000.0,
                            m.clock, paint("q quits", kDim)));
  std::optional<double> watts;
  std::optional<double> joules;
  for (const auto* list : {&m.gpus, &m.host_devices}) {
    for (const auto& d : *list) {
      if (d.now.power_w) watts = watts.value_or(0.0) + *d.now.power_w;
      if (d.now.energy_j) joules = joules.value_or(0.0) + *d.now.energy_j;
    }
  }
  const std::string wh = joules ? fmt::format(" ({:.2f} Wh)", *joules / 3600.0) : "";
  out.push_back(fmt::format("{}  {} now  ·  {}{} in {}  ·  {} GPU{}{}", paint("node", kBold),
                            watts_text(watts), energy_text(joules), wh, duration_text(m.elapsed_s),
                            m.gpus.size(), m.gpus.size() == 1 ? "" : "s",
                            m.host_devices.empty() ? "" : " + CPU/DRAM"));
  // CPU packages and DRAM, measured through RAPL (src/rapl) when the backend has them.
  for (const auto& d : m.host_devices) {
    out.push_back(fmt::format("{}  {}  {} now  ·  {}",
                              paint(fmt::format("{:<5}", to_string(d.info.kind)), kBold),
                              d.info.name, watts_text(d.now.power_w), energy_part(d)));
  }
  out.emplace_back();
  return out;
}

void processes(std::vector<std::string>& out, const screen_model& m, std::size_t room,
               const painter& paint) {
  if (room == 0 || !m.processes_known) return;
  if (room < 2 && !m.processes.empty()) return;  // a table header without rows says nothing
  if (m.processes.empty()) {
    out.push_back(paint("processes: none on these GPUs", kDim));
    return;
  }
  out.push_back(paint(
      fmt::format("{:>4} {:>8}  {:<10} {:>10}  {}", "GPU", "PID", "USER", "MEMORY", "COMMAND"),
      kBold));
  const std::size_t rows = std::min(room - 1, m.processes.size());
  for (std::size_t i = 0; i < rows; ++i) {
    const auto& p = m.processes[i];
    const bool last_fitting = i + 1 == rows && rows < m.processes.size();
    if (last_fitting) {
      out.push_back(paint(fmt::format("  … {} more processes", m.processes.size() - i), kDim));
      break;
    }
    out.push_back(fmt::format("{:>4} {:>8}  {:<10} {:>10}  {}{}", p.gpu, p.pid,
                              p.user.empty() ? "?" : p.user, bytes_text(p.memory_bytes),
                              p.command.empty() ? "?" : p.command,
                              p.graphics ? " (graphics)" : ""));
  }
}

}  // namespace

std::vector<std::string> render_screen(const screen_model& m, std::size_t width, std::size_t height,
                                       bool color) {
  const painter paint{color};
  std::vector<std::string> out = header(m, paint);
  const std::size_t n = m.gpus.size();
  const std::size_t used = out.size();
  const std::size_t avail = height > used ? height - used : 0;
  const std::size_t want_procs = !m.processes_known ? 0 : (m.processes.empty() ? 1 : 2);
  detail level = detail::minimal;
  if (n * kFullLines + want_procs <= avail) {
    level = detail::full;
  } else if (n * kCompactLines + want_procs <= avail) {
    level = detail::compact;
  }
  const std::size_t fitting = level == detail::minimal ? std::min(n, avail) : n;
  for (std::size_t i = 0; i < fitting; ++i) {
    const device_view& d = m.gpus[i];
    if (level == detail::full) {
      full_block(out, m, d, width, paint);
    } else if (level == detail::compact) {
      compact_block(out, m, d, width, paint);
    } else if (i + 1 == fitting && fitting < n) {
      out.push_back(
          paint(fmt::format("… {} more GPUs: enlarge the terminal, or use --gpus", n - i), kDim));
    } else {
      minimal_line(out, d, paint);
    }
  }
  if (out.size() < height) processes(out, m, height - out.size(), paint);
  if (out.size() > height) out.resize(height);
  for (auto& line : out)
    line = fit(line, width);
  return out;
}

}  // namespace joules::monitor
