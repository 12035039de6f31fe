#include "monitor/power_history.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>

namespace joules::monitor {
namespace {

constexpr std::array<std::string_view, 8> kLevels = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
// Partial blocks, one to seven eighths of a cell.
constexpr std::array<std::string_view, 8> kEighths = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
constexpr std::string_view kFull = "█";
constexpr std::string_view kEmpty = "░";

}  // namespace

void power_history::add(double t, std::optional<double> power_w) {
  if (power_w && std::isfinite(*power_w)) {
    if (samples_.empty() || t >= samples_.back().first) samples_.emplace_back(t, *power_w);
  }
  while (!samples_.empty() && samples_.front().first < t - span_s_)
    samples_.pop_front();
}

std::vector<std::optional<double>> power_history::buckets(double now, std::size_t columns) const {
  std::vector<std::optional<double>> out(columns);
  if (columns == 0) return out;
  std::vector<double> sum(columns, 0.0);
  std::vector<std::size_t> n(columns, 0);
  const double start = now - span_s_;
  const double width = span_s_ / static_cast<double>(columns);
  for (const auto& [t, w] : samples_) {
    if (t < start || t > now) continue;
    auto k = static_cast<std::size_t>((t - start) / width);
    k = std::min(k, columns - 1);
    sum[k] += w;
    ++n[k];
  }
  for (std::size_t k = 0; k < columns; ++k) {
    if (n[k] > 0) out[k] = sum[k] / static_cast<double>(n[k]);
  }
  return out;
}

std::optional<double> power_history::peak() const {
  std::optional<double> p;
  for (const auto& s : samples_) {
    if (!p || s.second > *p) p = s.second;
  }
  return p;
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
    out += kLevels[std::min<std::size_t>(level, 7)];
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

}  // namespace joules::monitor
