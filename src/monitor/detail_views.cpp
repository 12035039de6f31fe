// The views behind monitor's keys: one GPU in detail (its block, braille graphs of its power
// and utilisation over the last minutes with their scales, its processes), the graphs of every
// GPU, and the processes with their share of each GPU's energy.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "monitor/screen_parts.hpp"

namespace joules::monitor {
namespace {

constexpr std::size_t kGutter = 8;  // "700 W ┤": the scale's column

std::string scale_text(double v, bool watts) {
  if (watts && v == 0.0) return "0 W";
  return watts ? watts_text(v) : fmt::format("{:.0f}%", v);
}

// The time axis under a graph of `columns` cells over kHistorySpanS: "└-5m───-4m───…───now".
std::string time_axis(std::size_t columns) {
  std::vector<std::string> cell(columns, "─");
  const int minutes = static_cast<int>(kHistorySpanS / 60.0);
  auto put = [&](std::size_t at, const std::string& text) {
    if (at + text.size() > columns) return;
    for (std::size_t i = 0; i < text.size(); ++i) {
      if (cell[at + i] != "─") return;  // no label over another
    }
    for (std::size_t i = 0; i < text.size(); ++i)
      cell[at + i] = std::string(1, text[i]);
  };
  if (columns >= 3) put(columns - 3, "now");
  for (int k = minutes; k >= 1; --k) {
    const auto at = static_cast<std::size_t>(std::lround(
        static_cast<double>(columns) * (1.0 - static_cast<double>(k) * 60.0 / kHistorySpanS)));
    put(at, fmt::format("-{}m", k));
  }
  std::string out = std::string(kGutter - 1, ' ') + "└";
  for (const auto& c : cell)
    out += c;
  return out;
}

// `title`, a braille area graph of `h` over the whole history, `rows` high and `width` cells
// wide with its scale (full_scale at the top, half, 0), and the time axis.
void graph(lines& out, const std::string& title, const history* h, double now_s, double full_scale,
           bool watts, std::size_t rows, std::size_t width, const painter& paint,
           std::string_view color) {
  out.push_back(title);
  const std::size_t columns = width > kGutter ? width - kGutter : 0;
  std::vector<std::optional<double>> values;
  if (h != nullptr) values = h->buckets(now_s, columns * 2, kHistorySpanS);
  values.resize(columns * 2);
  const auto area = braille_area(values, full_scale, rows);
  for (std::size_t r = 0; r < rows; ++r) {
    // The scale at the top, the middle and the bottom row.
    std::string mark;
    if (r == 0) mark = scale_text(full_scale, watts);
    if (rows >= 3 && r == rows / 2 && rows % 2 == 1) mark = scale_text(full_scale / 2, watts);
    if (r + 1 == rows && rows > 1) mark = scale_text(0.0, watts);
    const std::string gutter =
        fmt::format("{:>{}} {}", mark, kGutter - 2, mark.empty() ? "│" : "┤");
    out.push_back(gutter + paint(area[r], color));
  }
  out.push_back(time_axis(columns));
}

std::string power_title(const screen_model& m, const device_view& d) {
  const auto peak =
      d.power_history != nullptr ? d.power_history->peak(m.now_s, kHistorySpanS) : std::nullopt;
  return fmt::format(" power   now {}, peak {}, limit {} (last {:.0f} min)",
                     watts_text(d.now.power_w), watts_text(peak), watts_text(limit_of(d)),
                     kHistorySpanS / 60.0);
}

std::string util_title(const device_view& d) {
  const auto& h = d.now.health;
  const std::string now =
      h && h->gpu_util_percent ? fmt::format("{}%", *h->gpu_util_percent) : std::string("-");
  return fmt::format(" utilisation   now {} (time a kernel ran)", now);
}

double power_scale(const device_view& d) {
  double scale = limit_of(d).value_or(0.0);
  if (!(scale > 0.0) && d.power_history != nullptr) scale = d.power_history->peak().value_or(0.0);
  return scale > 0.0 ? scale : 1.0;
}

std::vector<const process_row*> rows_of(const screen_model& m, std::optional<unsigned> gpu) {
  std::vector<const process_row*> out;
  for (const auto& p : m.processes) {
    if (!gpu || p.gpu == *gpu) out.push_back(&p);
  }
  return out;
}

// Why a GPU's processes have no share: its driver reports no per-process utilisation.
std::string no_share_note(const device_view& d) {
  return fmt::format(
      "GPU {}: the driver reports no per-process utilisation (MIG mode, or a "
      "board or driver without it): memory only",
      d.info.index);
}

// `text` as dim words that wrap between them.
parts dimmed_words(std::string_view text, const painter& paint) {
  parts out;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t end = std::min(text.find(' ', i), text.size());
    if (end > i) out.push_back({paint(text.substr(i, end - i), kDim), " "});
    i = end + 1;
  }
  return out;
}

bool share_unknown(const screen_model& m, const device_view& d) {
  const bool has_processes = std::any_of(m.processes.begin(), m.processes.end(),
                                         [&](const auto& p) { return p.gpu == d.info.index; });
  return has_processes && !(d.now.health && d.now.health->process_utilization_known);
}

}  // namespace

lines focus_view(const screen_model& m, const device_view& d, std::size_t width, std::size_t height,
                 const painter& paint, bool paused) {
  lines out = header(m, width, paint, paused);
  full_block(out, m, d, width, paint, /*spark=*/false);
  out.emplace_back();
  const auto procs = rows_of(m, d.info.index);
  const std::size_t used = out.size();
  const std::size_t left = height > used ? height - used : 0;
  // The processes get what they need up to a third of what is left; the graphs the rest.
  std::size_t proc_lines = 0;
  if (m.processes_known) proc_lines = procs.empty() ? 1 : std::min(procs.size() + 1, left / 3);
  lines note;  // why there is no share, when there is none
  if (share_unknown(m, d)) flow(note, "", dimmed_words(no_share_note(d), paint), width, 2);
  proc_lines += note.size();
  const std::size_t graph_lines = left > proc_lines + 1 ? left - proc_lines - 1 : 0;
  const bool side_by_side = width >= 120;
  // Each graph: a title, its rows and its time axis.
  const std::size_t per_graph = side_by_side ? graph_lines : graph_lines / 2;
  // As tall as the room allows: blank lines under a graph say nothing.
  const std::size_t rows = per_graph > 2 ? per_graph - 2 : 0;
  if (rows >= 2 && side_by_side) {
    lines left_graph;
    lines right_graph;
    const std::size_t half = width / 2;
    graph(left_graph, power_title(m, d), d.power_history, m.now_s, power_scale(d), true, rows,
          half - 1, paint, kCyan);
    graph(right_graph, util_title(d), d.util_history, m.now_s, 100.0, false, rows, width - half,
          paint, kGreen);
    for (std::size_t i = 0; i < left_graph.size(); ++i) {
      std::string l = fit(left_graph[i], half - 1);
      l += std::string(half - cells(l), ' ');
      out.push_back(l + right_graph[i]);
    }
  } else if (rows >= 2) {
    graph(out, power_title(m, d), d.power_history, m.now_s, power_scale(d), true, rows, width,
          paint, kCyan);
    graph(out, util_title(d), d.util_history, m.now_s, 100.0, false, rows, width, paint, kGreen);
  } else if (graph_lines >= 3) {
    // Room for one small graph: power.
    graph(out, power_title(m, d), d.power_history, m.now_s, power_scale(d), true, graph_lines - 2,
          width, paint, kCyan);
  }
  out.emplace_back();
  if (m.processes_known && procs.empty()) {
    out.push_back(paint("processes: none on this GPU", kDim));
  } else if (m.processes_known) {
    process_table(out, procs, std::max<std::size_t>(2, proc_lines - note.size()), width, paint);
  }
  out.insert(out.end(), note.begin(), note.end());
  return out;
}

lines graphs_view(const screen_model& m, const std::vector<std::size_t>& order, std::size_t width,
                  std::size_t height, const painter& paint, bool paused) {
  lines out = header(m, width, paint, paused);
  const std::size_t n = order.size();
  const std::size_t left = height > out.size() ? height - out.size() : 0;
  // Per GPU: its title line, the graph's rows, and one time axis under the last.
  const std::size_t per_gpu = n > 0 && left > 1 ? (left - 1) / n : 0;
  const std::size_t rows = per_gpu > 1 ? per_gpu - 1 : 1;
  const bool both = width >= 100;  // power and utilisation side by side
  const std::size_t half = both ? width / 2 : width;
  const std::size_t columns = half > kGutter + 1 ? half - kGutter - 1 : 0;
  std::size_t shown_gpus = 0;
  for (std::size_t i : order) {
    const device_view& d = m.gpus[i];
    if (out.size() + rows + 2 > height) break;
    const auto& h = d.now.health;
    std::string title = fmt::format(
        "{}  {}  {}", gpu_title(d, paint), power_title(m, d).substr(1),
        h && h->gpu_util_percent ? fmt::format("  gpu {}%", *h->gpu_util_percent) : std::string());
    out.push_back(title);
    lines p;
    lines u;
    graph(p, "", d.power_history, m.now_s, power_scale(d), true, rows, half - 1, paint, kCyan);
    if (both)
      graph(u, "", d.util_history, m.now_s, 100.0, false, rows, width - half, paint, kGreen);
    for (std::size_t r = 1; r + 1 < p.size(); ++r) {
      std::string l = p[r];
      if (both) {
        l = fit(l, half - 1);
        l += std::string(half - cells(l), ' ') + u[r];
      }
      out.push_back(l);
    }
    ++shown_gpus;
  }
  if (shown_gpus > 0) {
    std::string axis = time_axis(columns);
    if (both) axis += std::string(half - cells(axis), ' ') + time_axis(columns);
    out.push_back(axis);
  }
  if (shown_gpus < n && out.size() < height) {
    out.push_back(paint(
        fmt::format("… {} more GPUs: enlarge the terminal, or use --gpus", n - shown_gpus), kDim));
  }
  return out;
}

lines processes_view(const screen_model& m, const ui_state& ui, std::size_t width,
                     std::size_t height, const painter& paint, bool paused) {
  lines out = header(m, width, paint, paused);
  if (!m.processes_known) {
    out.push_back(paint("processes: the GPUs do not report them", kDim));
    return out;
  }
  std::vector<const process_row*> rows = rows_of(m, std::nullopt);
  // The GPUs' temperatures, for sorting the processes by their GPU's.
  auto temperature = [&](const process_row& p) -> std::optional<double> {
    for (const auto& d : m.gpus) {
      if (d.info.index == p.gpu && d.now.health) return d.now.health->temperature_c;
    }
    return std::nullopt;
  };
  auto value = [&](const process_row& p) -> std::optional<double> {
    switch (ui.sort) {
      case sort_key::index:
        return -static_cast<double>(p.gpu) * 1e7 - p.pid;
      case sort_key::power:
        return p.power_w;
      case sort_key::utilisation:
        return p.sm_util_percent;
      case sort_key::memory:
        return p.memory_bytes ? std::optional<double>(static_cast<double>(*p.memory_bytes))
                              : std::nullopt;
      case sort_key::temperature:
        return temperature(p);
    }
    return std::nullopt;
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const process_row* a, const process_row* b) {
    const auto va = value(*a);
    const auto vb = value(*b);
    if (va.has_value() != vb.has_value()) return va.has_value();
    if (!va || *va == *vb) return std::tie(a->gpu, a->pid) < std::tie(b->gpu, b->pid);
    return ui.reverse ? *va < *vb : *va > *vb;
  });
  if (rows.empty()) {
    out.push_back(paint("processes: none on these GPUs", kDim));
    return out;
  }
  // Under the table, when it leaves room: what SHARE means, and the GPUs without it.
  lines notes = {""};
  for (const auto& d : m.gpus) {
    if (share_unknown(m, d)) flow(notes, "", dimmed_words(no_share_note(d), paint), width, 2);
  }
  flow(notes, "",
       dimmed_words("SHARE: of its GPU's energy, in proportion to its SM utilisation (the time its "
                    "kernels ran); POWER: that share of the GPU's power now; ENERGY: that share "
                    "of the GPU's energy since monitor first saw the process",
                    paint),
       width, 2);
  const std::size_t room = height > out.size() ? height - out.size() : 0;
  const bool with_notes = room >= rows.size() + 1 + notes.size();
  process_table(out, rows, with_notes ? room - notes.size() : room, width, paint);
  if (with_notes) out.insert(out.end(), notes.begin(), notes.end());
  return out;
}

}  // namespace joules::monitor
