#include "session/device_choice.hpp"

namespace joules::session {

mig_parent_fn mig_parents_of(sampler& s) {
  return [&s](std::string_view mig) {
    return s.on_thread([&](backend& b) { return b.parent_of_mig(mig); });
  };
}

device_choice choose_devices(sampler& s, const std::optional<std::string>& gpus) {
  const backend& hw = s.hardware();
  device_choice out;
  for (std::size_t i = 0; i < hw.devices().size(); ++i) {
    if (hw.devices()[i].kind != device_kind::gpu) continue;
    out.gpus.push_back(hw.devices()[i]);
    out.gpu_index.push_back(i);
  }
  if (!out.gpus.empty()) {
    out.scope = select_devices(out.gpus, job_scope_request(gpus), mig_parents_of(s));
    for (std::size_t k : out.scope.devices)
      out.devices.push_back(out.gpu_index[k]);
  }
  for (std::size_t i = 0; i < hw.devices().size(); ++i) {
    if (hw.devices()[i].kind != device_kind::gpu) out.devices.push_back(i);
  }
  return out;
}

}  // namespace joules::session
