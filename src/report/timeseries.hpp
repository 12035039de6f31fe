#pragma once
// Power over time per device, from a run's `sample` records (min, mean and max of each
// bucket), or, for records written without samples, from each GPU's energy in each step and
// phase window (its mean power in the window).  Merged into at most N buckets for a plot.
// Pure.

#include <cstddef>
#include <string>
#include <vector>

#include "report/records.hpp"
#include "report/stats.hpp"

namespace joules::report {

struct device_series {
  std::string label;                   // "GPU 0", "node-2 GPU 3", "CPU 0"
  std::string kind;                    // gpu, cpu, dram
  std::vector<series_bucket> power_w;  // x in seconds after the node's start
};

struct power_view {
  std::vector<device_series> devices;
  bool from_samples = false;       // else from the windows' per-GPU energy
  double duration_s = 0.0;         // the time axis: 0 to this
  double sample_interval_s = 0.0;  // the finest sample bucket, when from samples
};

// Every device of every node of `r`, merged into at most `max_points` buckets each.
power_view power_over_time(const run& r, std::size_t max_points);

}  // namespace joules::report
