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

#include "monitor/screen_parts.hpp"

namespace joules::monitor {
namespace {

enum class detail { full, medium, compact, minimal };
constexpr std::array kScreenLevels = {detail::full, detail::medium, detail::compact,
                                      detail::minimal};

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
  out.push_back(
      std::string(kIndent, ' ') +
      paint(spark(d, m.now_s, width > kIndent + 2 ? width - kIndent - 2 : 0, kSparkSpanS), kCyan));
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

void device_block(lines& out, detail level, const screen_model& m, const device_view& d,
                  std::size_t width, const painter& paint) {
  switch (level) {
    case detail::full:
      full_block(out, m, d, width, paint, /*spark=*/true);
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

void processes(lines& out, const screen_model& m, std::size_t room, std::size_t width,
               const painter& paint) {
  if (room == 0 || !m.processes_known) return;
  if (room < 2 && !m.processes.empty()) return;  // a table header without rows says nothing
  // Apart from the last GPU's block, when every process fits with the blank line.
  if (room >= m.processes.size() + 2 && !out.empty() && !out.back().empty()) {
    out.emplace_back();
    --room;
  }
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
    out.push_back(ellipsized(
        fmt::format("{:>4} {:>8}  {:<10} {:>10}  {}{}", p.gpu, p.pid,
                    p.user.empty() ? "?" : shown(p.user), bytes_text(p.memory_bytes),
                    p.command.empty() ? "?" : shown(p.command), p.graphics ? " (graphics)" : ""),
        width));
  }
}

}  // namespace

lines overview(const screen_model& m, std::size_t width, std::size_t height, const painter& paint,
               bool paused) {
  lines out = header(m, width, paint, paused);
  const std::size_t n = m.gpus.size();
  const std::size_t avail = height > out.size() ? height - out.size() : 0;
  const std::size_t want_procs = !m.processes_known ? 0 : (m.processes.empty() ? 1 : 2);
  // The most detailed level at which every GPU's block fits, with room for the processes.
  std::vector<lines> blocks(n);
  auto render_all = [&](detail level) {
    std::size_t total = 0;
    for (std::size_t i = 0; i < n; ++i) {
      blocks[i].clear();
      device_block(blocks[i], level, m, m.gpus[i], width, paint);
      total += blocks[i].size();
    }
    return total;
  };
  std::optional<std::size_t> chosen;
  std::size_t total = 0;
  for (std::size_t k = 0; k + 1 < kScreenLevels.size() && !chosen; ++k) {
    total = render_all(kScreenLevels[k]);
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
      device_block(richer, kScreenLevels[*chosen - 1], m, m.gpus[i], width, paint);
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
  if (out.size() < height) processes(out, m, height - out.size(), width, paint);
  if (out.size() > height) out.resize(height);
  return out;
}

std::vector<std::string> render_screen(const screen_model& m, std::size_t width, std::size_t height,
                                       bool color) {
  lines out = overview(m, width, height, painter{color}, /*paused=*/false);
  for (auto& line : out)
    line = fit(line, width);
  return out;
}

}  // namespace joules::monitor