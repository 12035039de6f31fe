#include "backend/health.hpp"

#include "nvml/nvml_abi.hpp"

namespace joules {

clock_events clock_events::decode(std::uint64_t bits) {
  using namespace nvml;  // NOLINT(google-build-using-namespace): the bit names, here only
  clock_events e;
  e.raw = bits;
  e.gpu_idle = (bits & kClocksEventGpuIdle) != 0;
  e.applications_clocks = (bits & kClocksEventApplicationsClocksSetting) != 0;
  e.sw_power_cap = (bits & kClocksEventSwPowerCap) != 0;
  e.hw_slowdown = (bits & kClocksEventHwSlowdown) != 0;
  e.sync_boost = (bits & kClocksEventSyncBoost) != 0;
  e.sw_thermal = (bits & kClocksEventSwThermalSlowdown) != 0;
  e.hw_thermal = (bits & kClocksEventHwThermalSlowdown) != 0;
  e.hw_power_brake = (bits & kClocksEventHwPowerBrakeSlowdown) != 0;
  e.display_clock = (bits & kClocksEventDisplayClockSetting) != 0;
  return e;
}

std::vector<std::string> clock_events::active() const {
  std::vector<std::string> out;
  if (sw_power_cap) out.emplace_back("power_cap");
  if (hw_slowdown) out.emplace_back("hw_slowdown");
  if (hw_thermal) out.emplace_back("hw_thermal");
  if (sw_thermal) out.emplace_back("sw_thermal");
  if (hw_power_brake) out.emplace_back("power_brake");
  if (sync_boost) out.emplace_back("sync_boost");
  if (applications_clocks) out.emplace_back("applications_clocks");
  if (display_clock) out.emplace_back("display_clock");
  if (gpu_idle) out.emplace_back("idle");
  return out;
}

}  // namespace joules
