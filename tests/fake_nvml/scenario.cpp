#include "scenario.hpp"

#include "power_spec.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>

namespace fake_nvml {

unsigned long long device::counter_mj(double t) const {
  const counter_config& c = energy_counter;
  // The counter starts at scenario time 0: before its first update it reads initial_mj.
  const double q = fake_gpu::counter_instant(t, c.update_s, c.phase_s);
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

namespace {

const state_change* change_at(const std::vector<state_change>& changes, double t) {
  // The last change at or before t; scenarios carry a handful, so a linear scan will do.
  const state_change* found = nullptr;
  for (const state_change& c : changes) {
    if (c.at_s > t) break;
    found = &c;
  }
  return found;
}

}  // namespace

const device_health& device::health_at(double t) const {
  const state_change* c = change_at(changes, t);
  return c != nullptr ? c->health : health;
}

const std::vector<process>& device::processes_at(double t, bool graphics) const {
  const state_change* c = change_at(changes, t);
  if (c == nullptr) return graphics ? graphics_processes : compute_processes;
  return graphics ? c->graphics_processes : c->compute_processes;
}

unsigned long long device::pcie_bytes(double t, bool tx) const {
  auto rate = [tx](const device_health& h) {
    return 1024.0 * static_cast<double>(tx ? h.pcie_tx_kib_s : h.pcie_rx_kib_s);
  };
  double bytes = 0.0;
  double from = 0.0;
  const device_health* state = &health;
  for (const state_change& c : changes) {
    if (c.at_s >= t) break;
    bytes += rate(*state) * std::max(0.0, c.at_s - from);
    from = std::max(from, c.at_s);
    state = &c.health;
  }
  bytes += rate(*state) * std::max(0.0, t - from);
  return static_cast<unsigned long long>(bytes);
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
