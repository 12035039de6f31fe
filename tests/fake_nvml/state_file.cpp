#include "state_file.hpp"

#include <vector>

#include "limit_state.hpp"

namespace fake_nvml {
namespace {

std::vector<fake_gpu::limited_device> limited_devices(const scenario& s) {
  std::vector<fake_gpu::limited_device> out;
  out.reserve(s.devices.size());
  for (const device& d : s.devices)
    out.push_back({d.uuid, d.power.get(), d.min_limit_mw, d.max_limit_mw, &d.step_time_factor});
  return out;
}

}  // namespace

void save_state(const scenario& s) {
  fake_gpu::save_limits("FAKE_NVML", limited_devices(s));
}

void load_state(scenario& s, double t) {
  fake_gpu::load_limits("FAKE_NVML", limited_devices(s), t);
}

}  // namespace fake_nvml
