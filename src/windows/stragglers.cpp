#include "windows/stragglers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace joules {
namespace {

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

std::vector<std::optional<double>> straggler_detector::deviations(
    const std::vector<std::optional<double>>& per_step_j) {
  std::vector<double> known;
  for (const auto& e : per_step_j) {
    if (e) known.push_back(*e);
  }
  std::vector<std::optional<double>> out(per_step_j.size());
  if (known.size() < 2) return out;
  const double m = median_of(known);
  if (!(m > 0.0)) return out;
  for (std::size_t d = 0; d < per_step_j.size(); ++d) {
    if (per_step_j[d]) out[d] = (*per_step_j[d] - m) / m;
  }
  return out;
}

std::vector<straggler_event> straggler_detector::add(
    std::uint64_t step, const std::vector<std::optional<double>>& per_step_j) {
  std::vector<straggler_event> events;
  // With two GPUs the median sits between them and both look apart: three are needed.
  if (per_step_j.size() < 3) return events;
  const auto dev = deviations(per_step_j);
  for (std::size_t d = 0; d < dev.size() && d < history_.size(); ++d) {
    if (!dev[d]) continue;
    auto& h = history_[d];
    h.push_back(*dev[d]);
    if (h.size() > window_) h.pop_front();
    if (warned_[d] || h.size() < window_) continue;
    // Sustained means most steps and the average agree: a GPU that alternates between fast and
    // slow steps is noisy, not a straggler.
    const double m = median_of(std::vector<double>(h.begin(), h.end()));
    double mean = 0.0;
    for (double v : h)
      mean += v;
    mean /= static_cast<double>(h.size());
    if (std::abs(m) > threshold_ && std::abs(mean) > threshold_ && (m > 0) == (mean > 0)) {
      warned_[d] = true;
      events.push_back({d, m, step, window_});
    }
  }
  return events;
}

std::string straggler_message(const straggler_event& e, unsigned gpu_index, const std::string& uuid,
                              std::size_t gpus) {
  const bool below = e.deviation < 0;
  return fmt::format(
      "GPU {} ({}) used {:.0f}% {} energy per step than the median of the {} GPUs over the last {} "
      "steps (at step {}); {}",
      gpu_index, uuid, std::abs(e.deviation) * 100.0, below ? "less" : "more", gpus, e.window_steps,
      e.at_step,
      below
          ? "it is likely waiting for the others (a slow data loader or host on its rank, a stuck "
            "collective) or throttled (thermal or power cap, a degraded PCIe link; see joules "
            "doctor)"
          : "it is likely doing more work than its peers (uneven sharding or batches) or running "
            "less efficiently (hot, throttled clocks with high power)");
}

}  // namespace joules
