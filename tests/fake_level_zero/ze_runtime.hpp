#pragma once
// Process-wide state of the fake Level Zero loader: its initialisation (zesInit, or zeInit in a
// process with ZES_ENABLE_SYSMAN=1, as Intel's driver reads it at zeInit), the loaded scenario,
// scenario time, and the prologue of every Sysman call on a handle.

#include <cstdint>

#include "ze_scenario.hpp"

namespace fake_ze {

// zesInit (sysman = true) and zeInit (sysman when ZES_ENABLE_SYSMAN=1): 0 or a ze_result_t.
long long init(bool zes);
// The scenario, once Sysman is reachable (nullptr before).
const scenario* sysman();
// The scenario once zeInit or zesInit ran (for zeDriverGet and zeDeviceGet).
const scenario* loaded();
double now_s();
// Writes every device's limit to FAKE_ZE_STATE_FILE (after a set), for the next process.
void limits_changed();

class call {
 public:
  enum class state { ok, uninitialised, invalid, lost };
  call(const void* handle, component::kind k);

  state status() const { return state_; }
  std::uint32_t result() const;  // the ze_result_t of a status other than ok
  const component& comp() const { return *comp_; }
  const device& dev() const { return *comp_->owner; }
  double t() const { return t_; }
  long long fault(fake_gpu::reading_kind kind) const {
    return dev().faults.reading_status(kind, t_, 0);
  }

 private:
  state state_ = state::ok;
  const component* comp_ = nullptr;
  double t_ = 0.0;
};

}  // namespace fake_ze
