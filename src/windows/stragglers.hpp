#pragma once
// Finds GPUs that stay apart from the others: per step, each GPU's energy against
// the median of all GPUs; a GPU whose deviation stays beyond the threshold over a window of
// steps is reported once.  A GPU that uses less energy than its peers usually waits for them
// (a slow data loader on its rank, a stuck collective) or is throttled; one that uses more works
// harder (uneven sharding) or less efficiently (hot, degraded).  Pure logic.  Not thread-safe.

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace joules {

struct straggler_event {
  std::size_t device = 0;  // index among the measured devices
  double deviation = 0.0;  // median over the window, e.g. -0.23 for 23 % below
  std::uint64_t at_step = 0;
  std::size_t window_steps = 0;
};

class straggler_detector {
 public:
  straggler_detector(std::size_t devices, double threshold, std::size_t window)
      : threshold_(threshold), window_(window), history_(devices), warned_(devices, false) {}

  // One step window: each device's energy per step (nullopt when unknown).
  std::vector<straggler_event> add(std::uint64_t step,
                                   const std::vector<std::optional<double>>& per_step_j);

  // Deviation of each device from the median of this step (nullopt when unknown).
  static std::vector<std::optional<double>> deviations(
      const std::vector<std::optional<double>>& per_step_j);

 private:
  double threshold_;
  std::size_t window_;
  std::vector<std::deque<double>> history_;
  std::vector<bool> warned_;
};

// The warning line for an event, naming the GPU and the likely causes.
std::string straggler_message(const straggler_event& e, unsigned gpu_index, const std::string& uuid,
                              std::size_t gpus);

}  // namespace joules
