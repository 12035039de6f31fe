#include "monitor/layout.hpp"

#include <fmt/format.h>

#include "monitor/view.hpp"

namespace joules::monitor {

std::string painter::operator()(std::string_view text, std::string_view sgr) const {
  if (!color || text.empty()) return std::string(text);
  return fmt::format("\x1b[{}m{}\x1b[0m", sgr, text);
}

parts joined(const items& v, std::string_view sep) {
  parts out;
  for (const auto& s : v)
    out.push_back({s, std::string(sep)});
  return out;
}

parts group(std::string_view name, const items& v, std::string_view sep) {
  parts out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::string text = i == 0 && !name.empty() ? fmt::format("{} {}", name, v[i]) : v[i];
    if (i + 1 < v.size()) text += ",";
    out.push_back({std::move(text), i == 0 ? std::string(sep) : std::string(" ")});
  }
  return out;
}

parts operator+(parts a, const parts& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

void flow(lines& out, const std::string& lead, const parts& ps, std::size_t width,
          std::size_t indent) {
  std::string line = lead;
  std::size_t used = cells(lead);
  bool line_start = lead.empty() || lead.back() == ' ';
  for (const auto& p : ps) {
    if (p.text.empty()) continue;
    const std::size_t w = cells(p.text);
    const std::size_t gap = line_start ? 0 : cells(p.sep);
    if (!line_start && used + gap + w > width) {
      if (p.optional) continue;
      out.push_back(std::move(line));
      line = std::string(indent, ' ');
      used = indent;
    } else if (!line_start) {
      line += p.sep;
      used += gap;
    }
    line += p.text;
    used += w;
    line_start = false;
  }
  out.push_back(std::move(line));
}

void flow(lines& out, const std::string& lead, const items& v, std::string_view sep,
          std::size_t width, std::size_t indent) {
  flow(out, lead, joined(v, sep), width, indent);
}

}  // namespace joules::monitor
