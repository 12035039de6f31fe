#include "scenario.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>

namespace fake_nvml {

unsigned long long device::counter_mj(double t) const {
  const counter_config& c = energy_counter;
  double q = t;
  if (c.update_s > 0.0) q = c.phase_s + std::floor((t - c.phase_s) / c.update_s) * c.update_s;
  // The counter starts at scenario time 0: before its first update it reads initial_mj.
  q = std::max(q, 0.0);
  const double r = faults.last_reset_before(q);
  if (r < 0.0) {
    const double mj = std::max(std::floor(1000.0 * power->energy_j(q)), 0.0);
    return c.initial_mj + static_cast<unsigned long long>(mj);
  }
  // A reset is a driver reload: the counter starts again from 0 and initial_mj is gone.
  const double mj = std::max(std::floor(1000.0 * (power->energy_j(q) - power->energy_j(r))), 0.0);
  return static_cast<unsigned long long>(mj);
}

unsigned int device::reading_mw(const reading_config& r, double t) const {
  const double tau = r.update_s > 0.0 ? r.update_s * std::floor(t / r.update_s) : t;
  const double watts = r.window_s > 0.0
                           ? (power->energy_j(tau) - power->energy_j(tau - r.window_s)) / r.window_s
                           : power->watts_at(tau);
  const long long mw = std::llround(1000.0 * watts);
  return static_cast<unsigned int>(std::clamp<long long>(mw, 0, UINT_MAX));
}

const handle_slot* scenario::slot_of(joules::nvml::nvmlDevice_t handle) const {
  // Handles are addresses of slots; anything else (a stale handle from an earlier scenario,
  // garbage) is refused rather than dereferenced.
  const auto p = reinterpret_cast<std::uintptr_t>(handle);
  const auto base = reinterpret_cast<std::uintptr_t>(slots.data());
  if (p < base || p >= base + slots.size() * sizeof(handle_slot)) return nullptr;
  if ((p - base) % sizeof(handle_slot) != 0) return nullptr;
  return &slots[(p - base) / sizeof(handle_slot)];
}

joules::nvml::nvmlDevice_t scenario::handle_of(const handle_slot& slot) const {
  // NVML handles are opaque pointers; ours point at the slot, which stays put while loaded.
  return reinterpret_cast<joules::nvml::nvmlDevice_t>(const_cast<handle_slot*>(&slot));
}

}  // namespace fake_nvml
