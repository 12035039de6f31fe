// One frame of `joules monitor`'s live view: the view the keys chose (screen.cpp's overview,
// detail_views.cpp's focused GPU, graphs and processes), the footer that lists the keys, and the
// help overlay drawn over the middle of the frame.

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "monitor/screen_parts.hpp"

namespace joules::monitor {
namespace {

// The keys as the help overlay lists them, one line each.
constexpr std::array<std::array<std::string_view, 2>, 11> kKeys = {{
    {"?", "this help; any key closes it"},
    {"q, Ctrl-C", "quit"},
    {"Ctrl-Z", "suspend (fg brings it back)"},
    {"v", "next view: overview, processes, graphs"},
    {"s", "sort by index, power, utilisation, memory, temperature"},
    {"r", "reverse the sort"},
    {"p, space", "pause the screen (readings go on)"},
    {"←  →", "show the previous or next GPU in detail"},
    {"1 - 9", "show the first to ninth GPU in detail"},
    {"Esc, 0", "back to all GPUs"},
    {"", "history: the last 5 minutes of power and utilisation"},
}};
constexpr std::size_t kKeyColumn = 12;

// The value a GPU is sorted by; nullopt sorts last.
std::optional<double> sort_value(const device_view& d, sort_key key) {
  const auto& h = d.now.health;
  switch (key) {
    case sort_key::index:
      return -static_cast<double>(d.info.index);
    case sort_key::power:
      return d.now.power_w;
    case sort_key::utilisation:
      if (h && h->gpu_util_percent) return static_cast<double>(*h->gpu_util_percent);
      return std::nullopt;
    case sort_key::memory:
      if (h && h->memory_used_bytes) return static_cast<double>(*h->memory_used_bytes);
      return std::nullopt;
    case sort_key::temperature:
      return h ? h->temperature_c : std::nullopt;
  }
  return std::nullopt;
}

// One key and what it does, for the footer: "s sort: power".
std::string key_item(std::string_view k, std::string_view what, const painter& paint) {
  return paint.color ? fmt::format("{}{}", paint(fmt::format(" {} ", k), kReverse), what)
                     : fmt::format("{} {}", k, what);
}

std::string footer(const ui_state& ui, std::size_t width, const painter& paint) {
  const std::string order =
      ui.sort == sort_key::index ? (ui.reverse ? "↓" : "↑") : (ui.reverse ? "↑" : "↓");
  // Most useful first: what does not fit is left off from the end, "? help" says the rest.
  const std::vector<std::string> all = {
      key_item("q", "quit", paint),
      key_item("?", "help", paint),
      key_item("v", fmt::format("view: {}", ui.focus ? "gpu" : to_string(ui.view)), paint),
      key_item("s", fmt::format("sort: {}{}", to_string(ui.sort), order), paint),
      key_item("←→", "gpu", paint),
      key_item("p", ui.paused ? "resume" : "pause", paint),
      key_item("r", "reverse", paint),
      key_item("0", "all", paint),
  };
  std::string out;
  for (const auto& item : all) {
    const std::string next = out.empty() ? item : out + "  " + item;
    if (cells(next) > width) break;
    out = next;
  }
  return out;
}

// The help box drawn over the middle of `frame`, which is first made `height` lines tall.
void help_overlay(lines& frame, std::size_t width, std::size_t height, const painter& paint) {
  std::size_t inner = 0;
  for (const auto& [k, what] : kKeys)
    inner = std::max(inner, kKeyColumn + cells(what) + 2);
  inner = std::min(inner, width > 2 ? width - 2 : 0);
  lines box;
  const std::string title = " joules monitor: keys ";
  std::string top = "┌─" + paint(title, kBold);
  for (std::size_t i = cells(title) + 1; i < inner; ++i)
    top += "─";
  box.push_back(top + "┐");
  for (const auto& [k, what] : kKeys) {
    std::string text = fit(fmt::format(" {:<{}}{}", k, kKeyColumn - 1, what), inner);
    text += std::string(inner - cells(text), ' ');
    box.push_back("│" + (k.empty() ? paint(text, kDim) : text) + "│");
  }
  std::string bottom = "└";
  for (std::size_t i = 0; i < inner; ++i)
    bottom += "─";
  box.push_back(bottom + "┘");
  frame.resize(std::max(frame.size(), height));
  const std::size_t box_width = inner + 2;
  const std::size_t x = width > box_width ? (width - box_width) / 2 : 0;
  const std::size_t y = height > box.size() ? (height - box.size()) / 2 : 0;
  // The box's rows are the box alone: a view's numbers cut at its edges read as garbage.
  for (std::size_t i = 0; i < box.size() && y + i < frame.size(); ++i)
    frame[y + i] = std::string(x, ' ') + box[i];
}

}  // namespace

std::vector<std::size_t> gpu_order(const screen_model& m, const ui_state& ui) {
  std::vector<std::size_t> order(m.gpus.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto va = sort_value(m.gpus[a], ui.sort);
    const auto vb = sort_value(m.gpus[b], ui.sort);
    if (va.has_value() != vb.has_value()) return va.has_value();  // unknown last
    if (!va || *va == *vb) return m.gpus[a].info.index < m.gpus[b].info.index;
    return ui.reverse ? *va < *vb : *va > *vb;
  });
  return order;
}

std::vector<std::string> render_frame(const screen_model& m, const ui_state& ui, std::size_t width,
                                      std::size_t height, bool color) {
  const painter paint{color};
  const std::size_t body = m.keys && height > 1 ? height - 1 : height;
  lines out;
  const device_view* focused = nullptr;
  for (const auto& d : m.gpus) {
    if (ui.focus && d.info.index == *ui.focus) focused = &d;
  }
  if (focused != nullptr) {
    out = focus_view(m, *focused, width, body, paint, ui.paused);
  } else if (ui.view == view_kind::processes) {
    out = processes_view(m, ui, width, body, paint, ui.paused);
  } else if (ui.view == view_kind::graphs) {
    out = graphs_view(m, gpu_order(m, ui), width, body, paint, ui.paused);
  } else {
    screen_model sorted = m;
    sorted.gpus.clear();
    for (std::size_t i : gpu_order(m, ui))
      sorted.gpus.push_back(m.gpus[i]);
    out = overview(sorted, width, body, paint, ui.paused);
  }
  if (out.size() > body) out.resize(body);
  if (m.keys && height > 1) {
    out.resize(body);  // the footer on the last line, whatever the view's length
    out.push_back(footer(ui, width, paint));
  }
  if (ui.help) help_overlay(out, width, height, paint);
  for (auto& line : out)
    line = fit(line, width);
  return out;
}

}  // namespace joules::monitor
