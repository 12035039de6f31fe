#pragma once
// Process-wide state of the fake AMD SMI / ROCm SMI: the reference-counted initialisation (one
// count for each library's init), the loaded scenario, scenario time, and the prologue every call
// on a GPU runs.  The hot path takes no lock and allocates nothing.

#include <cstdint>

#include "amd_scenario.hpp"

namespace fake_amdsmi {

// amdsmi_init / rsmi_init: loads FAKE_AMDSMI_SCENARIO on the first reference.  Returns 0, or the
// scenario's init_error (AMD SMI's code), or -1 when the scenario cannot be read (explained on
// stderr once).
long long init();
void shutdown();
const scenario* current();
double now_s();
// Writes every GPU's limit to FAKE_AMDSMI_STATE_FILE (after a set), for the next process.
void limits_changed();

// The prologue of a call about one processor (a handle for AMD SMI, an index for ROCm SMI):
// validates it, applies the GPU's latency, and says whether the GPU is lost.
class call {
 public:
  enum class state { ok, uninitialised, invalid, lost };
  explicit call(const void* handle);
  explicit call(std::uint32_t index);

  state status() const { return state_; }
  const processor& proc() const { return *proc_; }
  const gpu& owner() const { return *proc_->owner; }
  bool primary() const { return proc_->partition == 0; }
  double t() const { return t_; }
  // The status a reading of this kind returns now (0: none), from the GPU's faults.
  long long fault(fake_gpu::reading_kind kind) const;

 private:
  void enter(const processor* p);

  state state_ = state::ok;
  const processor* proc_ = nullptr;
  double t_ = 0.0;
};

}  // namespace fake_amdsmi
