#include "monitor/history.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>

namespace joules::monitor {
namespace {

constexpr std::array<std::string_view, 8> kSparkLevels = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
// Partial blocks, one to seven eighths of a cell.
constexpr std::array<std::string_view, 8> kEighths = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
constexpr std::string_view kFull = "█";
constexpr std::string_view kEmpty = "░";

// Braille (U+2800 + dot bits): the dots of the left and right column, bottom first.
constexpr std::array<unsigned, 4> kLeftDots = {0x40, 0x04, 0x02, 0x01};
constexpr std::array<unsigned, 4> kRightDots = {0x80, 0x20, 0x10, 0x08};
constexpr unsigned kBrailleBase = 0x2800;

std::string utf8(unsigned cp) {
  // Braille patterns are U+2800..U+28FF: three bytes.
  std::string out(3, '\0');
  out[0] = static_cast<char>(0xE0U | (cp >> 12U));
  out[1] = static_cast<char>(0x80U | ((cp >> 6U) & 0x3FU));
  out[2] = static_cast<char>(0x80U | (cp & 0x3FU));
  return out;
}

}  // namespace

void history::add(double t, std::optional<double> value) {
  if (!entries_.empty() && t < entries_.back().t) return;
  const bool known = value && std::isfinite(*value);
  if (known) {
    entry* last = entries_.empty() ? nullptr : &entries_.back();
    if (last != nullptr && last->n > 0 && t - last->t < merge_s_) {
      // Bounded memory: a reading this close to the entry before it joins that entry.
      last->sum += *value;
      last->max = std::max(last->max, *value);
      ++last->n;
    } else {
      entries_.push_back(entry{t, *value, *value, 1});
    }
  } else if (!entries_.empty() && entries_.back().n > 0) {
    // An unknown value ends the previous reading's hold.
    entries_.push_back(entry{t, 0.0, 0.0, 0});
  }
  while (!entries_.empty() && entries_.front().t < t - span_s_)
    entries_.pop_front();
}

std::vector<std::optional<double>> history::buckets(double now, std::size_t columns,
                                                    double span_s) const {
  std::vector<std::optional<double>> out(columns);
  if (columns == 0 || !(span_s > 0.0)) return out;
  std::vector<double> sum(columns, 0.0);
  std::vector<std::size_t> n(columns, 0);
  // The latest entry before each bucket's start, for the buckets that hold none.
  std::vector<const entry*> before(columns, nullptr);
  const double start = now - span_s;
  const double width = span_s / static_cast<double>(columns);
  auto bucket_of = [&](double t) {
    return std::min(static_cast<std::size_t>((t - start) / width), columns - 1);
  };
  const entry* last = nullptr;
  std::size_t next_bucket = 0;  // buckets before it have their `before` set
  for (const auto& e : entries_) {
    if (e.t > now) break;
    if (e.t >= start) {
      const std::size_t k = bucket_of(e.t);
      for (; next_bucket <= k; ++next_bucket)
        before[next_bucket] = last;
      sum[k] += e.sum;
      n[k] += e.n;
    }
    last = &e;
  }
  for (; next_bucket < columns; ++next_bucket)
    before[next_bucket] = last;
  for (std::size_t k = 0; k < columns; ++k) {
    if (n[k] > 0) {
      out[k] = sum[k] / static_cast<double>(n[k]);
      continue;
    }
    const entry* p = before[k];
    const double bucket_start = start + width * static_cast<double>(k);
    if (p != nullptr && p->n > 0 && bucket_start - p->t <= hold_s_)
      out[k] = p->sum / static_cast<double>(p->n);
  }
  return out;
}

std::optional<double> history::peak() const {
  std::optional<double> p;
  for (const auto& e : entries_) {
    if (e.n > 0 && (!p || e.max > *p)) p = e.max;
  }
  return p;
}

std::optional<double> history::peak(double now, double span_s) const {
  std::optional<double> p;
  for (const auto& e : entries_) {
    if (e.n > 0 && e.t >= now - span_s && e.t <= now && (!p || e.max > *p)) p = e.max;
  }
  return p;
}

bool history::empty() const {
  return std::none_of(entries_.begin(), entries_.end(), [](const auto& e) { return e.n > 0; });
}

std::string sparkline(const std::vector<std::optional<double>>& values, double full_scale) {
  std::string out;
  for (const auto& v : values) {
    if (!v) {
      out += ' ';
      continue;
    }
    const double f = full_scale > 0.0 ? std::clamp(*v / full_scale, 0.0, 1.0) : 0.0;
    const auto level = static_cast<std::size_t>(std::lround(f * 7.0));
    out += kSparkLevels[std::min<std::size_t>(level, 7)];
  }
  return out;
}

std::string bar(double fraction, std::size_t width) {
  const double f = std::isfinite(fraction) ? std::clamp(fraction, 0.0, 1.0) : 0.0;
  const auto eighths = static_cast<std::size_t>(std::lround(f * static_cast<double>(width * 8)));
  const std::size_t full = eighths / 8;
  const std::size_t part = eighths % 8;
  std::string out;
  for (std::size_t i = 0; i < full; ++i)
    out += kFull;
  std::size_t used = full;
  if (part > 0) {
    out += kEighths[part];
    ++used;
  }
  for (; used < width; ++used)
    out += kEmpty;
  return out;
}

std::vector<std::string> braille_area(const std::vector<std::optional<double>>& values,
                                      double full_scale, std::size_t rows) {
  std::vector<std::string> out(rows);
  if (rows == 0) return out;
  const std::size_t dots = rows * 4;
  // Dots lit in each column, from the bottom; a known value lights at least one, so that a
  // low reading is told from none.
  std::vector<std::size_t> height(values.size(), 0);
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!values[i]) continue;
    const double f = full_scale > 0.0 ? std::clamp(*values[i] / full_scale, 0.0, 1.0) : 0.0;
    height[i] = std::max<std::size_t>(
        1, static_cast<std::size_t>(std::lround(f * static_cast<double>(dots))));
  }
  const std::size_t cells = (values.size() + 1) / 2;
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t floor_dot = (rows - 1 - r) * 4;  // dots below this row
    for (std::size_t c = 0; c < cells; ++c) {
      unsigned bits = 0;
      for (std::size_t side = 0; side < 2; ++side) {
        const std::size_t i = c * 2 + side;
        if (i >= values.size()) continue;
        const std::size_t lit =
            height[i] > floor_dot ? std::min<std::size_t>(height[i] - floor_dot, 4) : 0;
        for (std::size_t d = 0; d < lit; ++d)
          bits |= side == 0 ? kLeftDots[d] : kRightDots[d];
      }
      out[r] += bits == 0 ? std::string(" ") : utf8(kBrailleBase + bits);
    }
  }
  return out;
}

}  // namespace joules::monitor
