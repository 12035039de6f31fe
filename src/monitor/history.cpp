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
  if (samples_.empty() || t >= samples_.back().first) {
    // An unknown power is kept as NaN: it ends the previous reading's hold.
    const double w = power_w && std::isfinite(*power_w) ? *power_w : std::nan("");
    if (!std::isnan(w) || (!samples_.empty() && !std::isnan(samples_.back().second)))
      samples_.emplace_back(t, w);
  }
  while (!samples_.empty() && samples_.front().first < t - span_s_)
    samples_.pop_front();
}

std::vector<std::optional<double>> power_history::buckets(double now, std::size_t columns) const {
  std::vector<std::optional<double>> out(columns);
  if (columns == 0) return out;
  std::vector<double> sum(columns, 0.0);
  std::vector<std::size_t> n(columns, 0);
  // The latest sample before each bucket's start, for the buckets that hold none.
  std::vector<const std::pair<double, double>*> before(columns, nullptr);
  const double start = now - span_s_;
  const double width = span_s_ / static_cast<double>(columns);
  auto bucket_of = [&](double t) {
    return std::min(static_cast<std::size_t>((t - start) / width), columns - 1);
  };
  const std::pair<double, double>* last = nullptr;
  std::size_t next_bucket = 0;  // buckets before it have their `before` set
  for (const auto& s : samples_) {
    if (s.first > now) break;
    if (s.first >= start) {
      const std::size_t k = bucket_of(s.first);
      for (; next_bucket <= k; ++next_bucket)
        before[next_bucket] = last;
      if (!std::isnan(s.second)) {
        sum[k] += s.second;
        ++n[k];
      }
    }
    last = &s;
  }
  for (; next_bucket < columns; ++next_bucket)
    before[next_bucket] = last;
  for (std::size_t k = 0; k < columns; ++k) {
    if (n[k] > 0) {
      out[k] = sum[k] / static_cast<double>(n[k]);
      continue;
    }
    const auto* p = before[k];
    const double bucket_start = start + width * static_cast<double>(k);
    if (p != nullptr && !std::isnan(p->second) && bucket_start - p->first <= hold_s_)
      out[k] = p->second;
  }
  return out;
}

std::optional<double> power_history::peak() const {
  std::optional<double> p;
  for (const auto& s : samples_) {
    if (!std::isnan(s.second) && (!p || s.second > *p)) p = s.second;
  }
  return p;
}

bool power_history::empty() const {
  return std::none_of(samples_.begin(), samples_.end(),
                      [](const auto& s) { return !std::isnan(s.second); });
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
