// The full-screen view of `joules monitor`: a header with the node's totals, one block per GPU
// (as detailed as the terminal's height allows), the CPU/DRAM rows when RAPL domains are
// measured, and the processes on the GPUs.
//
// Every line is laid out from parts (a flag, "sm 88%", "pcie gen5 x16") that are never cut
// (layout.hpp), so that every health flag and throttle reason is readable at 80 columns.
// Blocks are built at each level of detail (10, 4, 3 and 1 lines for a healthy GPU), the most
// detailed level at which every block fits is shown, and the lines left once every process is
// listed give some GPUs, those with a problem first, the next level up.

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "health/findings.hpp"
#include "monitor/layout.hpp"
#include "monitor/view.hpp"
#include "text/escape.hpp"

namespace joules::monitor {
namespace {

// A name from the driver or from /proc (a process may name itself anything, escape sequences
// included) as the screen shows it: never acted on by the terminal.
std::string shown(std::string_view outside) {
  return text::escape_for_terminal(outside);
}

enum class detail { full, medium, compact, minimal };
constexpr std::array kLevels = {detail::full, detail::medium, detail::compact, detail::minimal};
constexpr std::size_t kLabel = 10;  // " throttle ": the labels' column in full blocks

// ANSI SGR codes, used only when colour is on (a terminal, NO_COLOR unset).
constexpr std::string_view kBold = "1";
constexpr std::string_view kDim = "2";
constexpr std::string_view kRed = "31";
constexpr std::string_view kGreen = "32";
constexpr std::string_view kYellow = "33";
constexpr std::string_view kCyan = "36";
constexpr std::string_view kAlert = "1;31";

std::string label(std::string_view name) {
  return fmt::format(" {:<{}}", name, kLabel - 1);
}

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
  return fmt::format("{} {:.0f}%", name, *v);
}

std::string percent(std::string_view name, const std::optional<unsigned>& v) {
  if (!v) return {};
  return fmt::format("{} {}%", name, *v);
}

std::string celsius(const std::optional<double>& c) {
  return c ? fmt::format("{:.0f}°C", *c) : "-";
}

std::string clock_pair(const std::optional<unsigned>& now, const std::optional<unsigned>& max) {
  if (!now) return "-";
  return max ? fmt::format("{}/{}", *now, *max) : fmt::format("{}", *now);
}

// The health flags: "ok", or each warning and critical finding's flag in colour.
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

std::string spark(const device_view& d, double now_s, std::size_t columns) {
  if (d.history == nullptr || columns == 0) return {};
  double scale = limit_of(d).value_or(0.0);
  if (!(scale > 0.0)) scale = d.history->peak().value_or(0.0);
  return sparkline(d.history->buckets(now_s, columns), scale);
}

std::string gpu_title(const device_view& d, const painter& paint) {
  return paint(fmt::format("GPU {}", d.info.index), kBold);
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

items use_items(const health_reading& h) {
  items v = {
      percent("gpu", h.gpu_util_percent),           percent("mem-bw", h.memory_util_percent),
      percent("sm", h.sm_activity_percent),         percent("occupancy", h.sm_occupancy_percent),
      percent("tensor", h.tensor_activity_percent), percent("dram", h.dram_bandwidth_percent)};
  if (std::all_of(v.begin(), v.end(), [](const auto& s) { return s.empty(); })) return {"-"};
  return v;
}

// The sparkline with its span and peak: " 60 s     ▁▂▃…  peak 695 W".
std::string spark_line(const screen_model& m, const device_view& d, std::size_t width,
                       std::size_t indent, const painter& paint) {
  const auto peak = d.history != nullptr ? d.history->peak() : std::nullopt;
  const std::string tail = fmt::format("  peak {}", watts_text(peak));
  const double span = d.history != nullptr ? d.history->span_s() : 60.0;
  const std::string lead = fmt::format(" {:<{}}", fmt::format("{:.0f} s", span), indent - 1);
  const std::size_t columns =
      width > indent + tail.size() + 1 ? width - indent - tail.size() - 1 : 0;
  return lead + paint(spark(d, m.now_s, columns), kCyan) + tail;
}

void full_block(lines& out, const screen_model& m, const device_view& d, std::size_t width,
                const painter& paint) {
  const health_reading empty;
  const health_reading& h = d.now.health ? *d.now.health : empty;
  const std::size_t bar_width = std::clamp<std::size_t>(width > 64 ? width - 64 : 10, 10, 40);
  flow(out, gpu_title(d, paint),
       {shown(d.info.name), paint(shown(d.info.pci_bus_id), kDim), paint(shown(d.info.uuid), kDim),
        lost_mark(d, paint)},
       "  ", width, kLabel);
  flow(out, label("power"),
       {power_bar(d, bar_width, paint), watts_pair(d),
        fmt::format(" energy {} since start ({})", energy_text(d.now.energy_j),
                    to_string(d.info.method()))},
       "  ", width, kLabel);
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
  items links = {pcie_text(h), pcie_rates(h), nvlink_text(h)};
  if (std::any_of(links.begin(), links.end(), [](const auto& s) { return !s.empty(); }))
    flow(out, label("links"), links, "   ", width, kLabel);
  flow(out, label("throttle"), group("", throttle_reasons(d, paint), ""), width, kLabel);
  flow(out, label("health"), group("", health_flags(d, paint), ""), width, kLabel);
  out.push_back(spark_line(m, d, width, kLabel, paint));
  out.emplace_back();
}

// Four lines and more per GPU: what the full block says, without the identifiers and with
// fewer labels.
void medium_block(lines& out, const screen_model& m, const device_view& d, std::size_t width,
                  const painter& paint) {
  const health_reading empty;
  const health_reading& h = d.now.health ? *d.now.health : empty;
  flow(out, gpu_title(d, paint),
       joined({lost_mark(d, paint), power_bar(d, 20, paint), watts_pair(d),
               fmt::format("{} ({})", energy_text(d.now.energy_j), to_string(d.info.method())),
               fmt::format("memory {} / {}", bytes_text(h.memory_used_bytes),
                           bytes_text(h.memory_total_bytes))},
              "  ") +
           parts{{shown(d.info.name), "  ", true}},
       width, kLabel);
  flow(out, label("use"),
       joined(use_items(h), "  ") + parts{{fmt::format("temp {}  mem {}", celsius(h.temperature_c),
                                                       celsius(h.memory_temperature_c)),
                                           "   "}},
       width, kLabel);
  flow(out, label("clocks"),
       joined({fmt::format("sm {} MHz", clock_pair(h.sm_clock_mhz, h.max_sm_clock_mhz)),
               fmt::format("mem {} MHz", clock_pair(h.memory_clock_mhz, h.max_memory_clock_mhz)),
               pcie_text(h), pcie_rates(h), nvlink_text(h)},
              "   ") +
           group("throttle", throttle_reasons(d, paint), "   ") +
           group("health", health_flags(d, paint), "  "),
       width, kLabel);
  out.push_back(spark_line(m, d, width, kLabel, paint));
}

void compact_block(lines& out, const screen_model& m, const device_view& d, std::size_t width,
                   const painter& paint) {
  const health_reading empty;
  const health_reading& h = d.now.health ? *d.now.health : empty;
  constexpr std::size_t kIndent = 6;
  flow(out, gpu_title(d, paint),
       joined({lost_mark(d, paint), power_bar(d, 12, paint) + " " + watts_pair(d),
               energy_text(d.now.energy_j), percent("gpu", h.gpu_util_percent),
               percent("sm", h.sm_activity_percent), percent("tensor", h.tensor_activity_percent),
               celsius(h.temperature_c)},
              "  ") +
           parts{{shown(d.info.name), "  ", true}},
       width, kIndent);
  flow(out, std::string(kIndent, ' '),
       joined({fmt::format("mem {} / {}", bytes_text(h.memory_used_bytes),
                           bytes_text(h.memory_total_bytes)),
               fmt::format("sm {} MHz", clock_pair(h.sm_clock_mhz, h.max_sm_clock_mhz))},
              "  ") +
           group("throttle", throttle_reasons(d, paint), "  ") +
           group("health", health_flags(d, paint), "  "),
       width, kIndent);
  out.push_back(std::string(kIndent, ' ') +
                paint(spark(d, m.now_s, width > kIndent + 2 ? width - kIndent - 2 : 0), kCyan));
}

void minimal_block(lines& out, const device_view& d, std::size_t width, const painter& paint) {
  const health_reading empty;
  const health_reading& h = d.now.health ? *d.now.health : empty;
  parts v = joined({power_bar(d, 10, paint) + " " + watts_pair(d), energy_text(d.now.energy_j),
                    percent("gpu", h.gpu_util_percent), celsius(h.temperature_c)},
                   "  ");
  const items reasons = throttle_reasons(d, paint);
  if (reasons.size() != 1 || (reasons[0] != "none" && reasons[0] != "-"))
    v = v + group("", reasons, "  ");
  v = v + group("", health_flags(d, paint), "  ");
  flow(out, paint(fmt::format("GPU {:<2}", d.info.index), kBold), v, width, 7);
}

bool has_problems(const device_view& d) {
  if (d.now.lost) return true;
  if (!d.now.health) return false;
  const auto f = health::health_findings(d.info, *d.now.health, false);
  return std::any_of(f.begin(), f.end(),
                     [](const auto& x) { return x.level != health::severity::info; });
}

void block(lines& out, detail level, const screen_model& m, const device_view& d, std::size_t width,
           const painter& paint) {
  switch (level) {
    case detail::full:
      full_block(out, m, d, width, paint);
      break;
    case detail::medium:
      medium_block(out, m, d, width, paint);
      break;
    case detail::compact:
      compact_block(out, m, d, width, paint);
      break;
    case detail::minimal:
      minimal_block(out, d, width, paint);
      break;
  }
}

lines header(const screen_model& m, std::size_t width, const painter& paint) {
  lines out;
  items title = {m.host, m.source, fmt::format("every {:g} ms", m.interval_s * 1000.0), m.clock};
  if (m.keys) title.push_back(paint("q quits", kDim));
  flow(out, paint("joules monitor", kBold) + "  ", title, " · ", width, 2);
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

void processes(lines& out, const screen_model& m, std::size_t room, const painter& paint) {
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
                              p.user.empty() ? "?" : shown(p.user), bytes_text(p.memory_bytes),
                              p.command.empty() ? "?" : shown(p.command),
                              p.graphics ? " (graphics)" : ""));
  }
}

}  // namespace

std::vector<std::string> render_screen(const screen_model& m, std::size_t width, std::size_t height,
                                       bool color) {
  const painter paint{color};
  lines out = header(m, width, paint);
  const std::size_t n = m.gpus.size();
  const std::size_t avail = height > out.size() ? height - out.size() : 0;
  const std::size_t want_procs = !m.processes_known ? 0 : (m.processes.empty() ? 1 : 2);
  // The most detailed level at which every GPU's block fits, with room for the processes.
  std::vector<lines> blocks(n);
  auto render_all = [&](detail level) {
    std::size_t total = 0;
    for (std::size_t i = 0; i < n; ++i) {
      blocks[i].clear();
      block(blocks[i], level, m, m.gpus[i], width, paint);
      total += blocks[i].size();
    }
    return total;
  };
  std::optional<std::size_t> chosen;
  std::size_t total = 0;
  for (std::size_t k = 0; k + 1 < kLevels.size() && !chosen; ++k) {
    total = render_all(kLevels[k]);
    if (total + want_procs <= avail) chosen = k;
  }
  lines body;
  if (chosen) {
    // Lines left once every process is listed go to more detail for some GPUs, those with
    // something wrong first: better than empty lines at the bottom.
    const std::size_t procs =
        !m.processes_known ? 0 : (m.processes.empty() ? 1 : m.processes.size() + 1);
    std::size_t spare = avail > total + procs ? avail - total - procs : 0;
    std::vector<std::size_t> order(n);
    for (std::size_t i = 0; i < n; ++i)
      order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return has_problems(m.gpus[a]) && !has_problems(m.gpus[b]);
    });
    for (std::size_t i : order) {
      if (*chosen == 0 || spare == 0) break;
      lines richer;
      block(richer, kLevels[*chosen - 1], m, m.gpus[i], width, paint);
      const std::size_t extra = richer.size() - blocks[i].size();
      if (extra > spare) continue;
      spare -= extra;
      blocks[i] = std::move(richer);
    }
    for (const auto& b : blocks)
      body.insert(body.end(), b.begin(), b.end());
  } else {
    // One line per GPU (more for one with many flags), as many GPUs as fit.
    for (std::size_t i = 0; i < n; ++i) {
      lines one;
      minimal_block(one, m.gpus[i], width, paint);
      const bool last = i + 1 == n;
      if (body.size() + one.size() + (last ? 0 : 1) > avail) {
        if (body.size() < avail) {
          body.push_back(paint(
              fmt::format("… {} more GPUs: enlarge the terminal, or use --gpus", n - i), kDim));
        }
        break;
      }
      body.insert(body.end(), one.begin(), one.end());
    }
  }
  out.insert(out.end(), body.begin(), body.end());
  if (out.size() < height) processes(out, m, height - out.size(), paint);
  if (out.size() > height) out.resize(height);
  for (auto& line : out)
    line = fit(line, width);
  return out;
}

}  // namespace joules::monitor
