#include "report/timeseries.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "report/summary_parts.hpp"

namespace joules::report {

power_view power_over_time(const run& r, std::size_t max_points) {
  power_view view;
  const bool samples =
      std::any_of(r.nodes.begin(), r.nodes.end(), [](const node& n) { return !n.samples.empty(); });
  view.from_samples = samples;
  view.sample_interval_s = 0.0;
  const bool many_nodes = r.nodes.size() > 1;
  for (const auto& n : r.nodes) {
    const double origin = origin_of(n);
    if (n.duration_s) view.duration_s = std::max(view.duration_s, *n.duration_s);
    // device key (kind, index) -> points
    std::map<std::pair<std::string, std::int64_t>, std::vector<series_point>> points;
    if (samples) {
      for (const auto& s : n.samples) {
        const double d = s.end_s - s.start_s;
        if (d <= 0) continue;
        if (view.sample_interval_s == 0.0 || d < view.sample_interval_s) view.sample_interval_s = d;
        view.duration_s = std::max(view.duration_s, s.end_s - origin);
        for (const auto& dev : s.devices) {
          std::optional<double> mean = dev.power_w.mean;
          if (!mean && dev.energy_j) mean = *dev.energy_j / d;
          if (!mean) continue;
          series_point p;
          p.x = (s.start_s + s.end_s) / 2.0 - origin;
          p.y = *mean;
          p.weight = d;
          p.lo = dev.power_w.min;
          p.hi = dev.power_w.max;
          points[{dev.kind, dev.index}].push_back(p);
        }
      }
    } else {
      for (const auto& w : n.windows) {
        if (w.duration_s <= 0) continue;
        view.duration_s = std::max(view.duration_s, w.end_s - origin);
        for (const auto& [idx, e] : w.gpu_energy_j) {
          series_point p;
          p.x = (w.start_s + w.end_s) / 2.0 - origin;
          p.y = e / w.duration_s;
          p.weight = w.duration_s;
          points[{"gpu", idx}].push_back(p);
        }
      }
    }
    for (auto& [key, pts] : points) {
      device_series ds;
      ds.kind = key.first.empty() ? "gpu" : key.first;
      const std::string dev = ds.kind == "gpu"   ? fmt::format("GPU {}", key.second)
                              : ds.kind == "cpu" ? fmt::format("CPU {}", key.second)
                                                 : fmt::format("DRAM {}", key.second);
      ds.label = many_nodes ? n.hostname + " " + dev : dev;
      ds.power_w = decimate(pts, 0.0, std::max(view.duration_s, 1e-9), max_points);
      view.devices.push_back(std::move(ds));
    }
  }
  return view;
}

}  // namespace joules::report
