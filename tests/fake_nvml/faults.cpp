#include "faults.hpp"

#include <algorithm>

namespace fake_nvml {

nvmlReturn_t fault_set::reading_status(reading_kind kind, double t) const {
  for (const status_window& w : statuses) {
    const bool named = kind == reading_kind::energy ? w.energy : w.power;
    if (named && t >= w.from_s && t < w.until_s) return w.code;
  }
  return joules::nvml::kSuccess;
}

unsigned int fault_set::latency_us(double t, unsigned int usual_us) const {
  for (const latency_window& w : latencies) {
    if (t >= w.from_s && t < w.until_s) return w.latency_us;
  }
  return usual_us;
}

double fault_set::last_reset_before(double q) const {
  const auto it = std::upper_bound(counter_resets_s.begin(), counter_resets_s.end(), q);
  return it == counter_resets_s.begin() ? -1.0 : *(it - 1);
}

}  // namespace fake_nvml
