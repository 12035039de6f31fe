#include "report/stats.hpp"

#include <algorithm>
#include <cmath>

namespace joules::report {

std::optional<double> quantile(std::vector<double> values, double q) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  const double f = pos - static_cast<double>(lo);
  return values[lo] + (values[hi] - values[lo]) * f;
}

histogram make_histogram(const std::vector<double>& values, std::size_t bins) {
  histogram h;
  if (values.empty() || bins == 0) return h;
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  auto at = [&](double q) {
    const double pos = q * static_cast<double>(sorted.size() - 1);
    return sorted[static_cast<std::size_t>(std::lround(pos))];
  };
  h.lo = at(0.005);
  h.hi = at(0.995);
  if (h.hi <= h.lo) {
    // All (nearly) equal: one visible bin around the value.
    const double pad = std::max(std::abs(h.lo) * 0.01, 1e-9);
    h.lo -= pad;
    h.hi += pad;
  }
  h.counts.assign(bins, 0);
  const double width = (h.hi - h.lo) / static_cast<double>(bins);
  for (double v : values) {
    if (v < h.lo) {
      ++h.below;
    } else if (v > h.hi) {
      ++h.above;
    } else {
      const auto b = static_cast<std::size_t>((v - h.lo) / width);
      ++h.counts[std::min(b, bins - 1)];
    }
  }
  return h;
}

ratio_estimate batch_ratio(const std::vector<double>& num, const std::vector<double>& den,
                           std::size_t batches) {
  ratio_estimate r;
  const std::size_t n = std::min(num.size(), den.size());
  double sn = 0.0;
  double sd = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    sn += num[i];
    sd += den[i];
  }
  if (n == 0 || sd <= 0.0) return r;
  r.value = sn / sd;
  if (batches < 2 || n < 2 * batches) return r;
  std::vector<double> means;
  for (std::size_t b = 0; b < batches; ++b) {
    const std::size_t from = b * n / batches;
    const std::size_t to = (b + 1) * n / batches;
    double bn = 0.0;
    double bd = 0.0;
    for (std::size_t i = from; i < to; ++i) {
      bn += num[i];
      bd += den[i];
    }
    if (bd > 0.0) means.push_back(bn / bd);
  }
  if (means.size() < 2) return r;
  double m = 0.0;
  for (double v : means)
    m += v;
  m /= static_cast<double>(means.size());
  double ss = 0.0;
  for (double v : means)
    ss += (v - m) * (v - m);
  const double k = static_cast<double>(means.size());
  r.standard_error = std::sqrt(ss / (k - 1.0) / k);
  return r;
}

std::vector<series_bucket> decimate(const std::vector<series_point>& points, double x0, double x1,
                                    std::size_t n) {
  std::vector<series_bucket> out;
  if (points.empty() || n == 0) return out;
  if (points.size() <= n || x1 <= x0) {
    out.reserve(points.size());
    for (const auto& p : points)
      out.push_back({p.x, p.x, p.lo.value_or(p.y), p.y, p.hi.value_or(p.y)});
    return out;
  }
  struct acc {
    double min = 0.0;
    double max = 0.0;
    double sum = 0.0;
    double weight = 0.0;
    double first = 0.0;
    double last = 0.0;
    bool any = false;
  };
  std::vector<acc> b(n);
  const double width = (x1 - x0) / static_cast<double>(n);
  for (const auto& p : points) {
    const double pos = std::floor((p.x - x0) / width);
    const auto i = static_cast<std::size_t>(std::clamp(pos, 0.0, static_cast<double>(n - 1)));
    acc& a = b[i];
    const double lo = p.lo.value_or(p.y);
    const double hi = p.hi.value_or(p.y);
    if (!a.any) {
      a.min = lo;
      a.max = hi;
      a.first = p.x;
      a.any = true;
    }
    a.min = std::min(a.min, lo);
    a.max = std::max(a.max, hi);
    a.sum += p.y * p.weight;
    a.weight += p.weight;
    a.last = p.x;
  }
  for (const auto& a : b) {
    if (!a.any) continue;
    const double mean = a.weight > 0.0 ? a.sum / a.weight : (a.min + a.max) / 2.0;
    out.push_back({a.first, a.last, a.min, mean, a.max});
  }
  return out;
}

}  // namespace joules::report
