#include "backends/health.hpp"

namespace joules {

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
