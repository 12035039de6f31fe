#pragma once
// Process-wide state of the fake: the reference-counted initialisation, the loaded scenario, the
// scenario clock, per-function call counts (FAKE_NVML_CALL_LOG) and the prologue every entry
// point runs.  The hot path (api_call / device_call) takes no lock and allocates nothing.

#include <cstddef>

#include "backends/nvml/nvml_abi.hpp"
#include "scenario.hpp"

namespace fake_nvml {

namespace nv = joules::nvml;

// One enumerator per entry of nvml_symbols.def, in its order.
enum class fn : std::size_t {
#define JOULES_NVML_FN(level, ret, name, params) name,
#include "backends/nvml/nvml_symbols.def"
#undef JOULES_NVML_FN
  count
};

// The NVML header level of the newest symbol this variant exports (1208 full, 1100 r470, 0 r390).
int driver_level();
inline constexpr int kLevelPowerFields = 1202;  // fields 185-192 appeared in the 12.2 header

void count_call(fn f);
// nvmlInit*: loads FAKE_NVML_SCENARIO on the first reference.  nvmlShutdown: drops one.
nv::nvmlReturn_t init();
nv::nvmlReturn_t shutdown();

// Scenario time in seconds: (CLOCK_MONOTONIC - epoch) / 1e9, or FAKE_NVML_CLOCK_FILE's value.
double now_s();
long long realtime_us();  // for nvmlFieldValue_t::timestamp
// Sleeps (clock_nanosleep, never a spin) like an ioctl that waits on the GPU.
void sleep_us(unsigned int us);
// Spins until the calling thread has used `us` more of CPU time, like a driver call that works
// on the CPU; counts one read of an energy counter for the call log ("energy_reads").
void spin_energy_read(unsigned int us);
void count_energy_read();

// Prologue of a system-level entry point: counts the call and checks initialisation.
class api_call {
 public:
  explicit api_call(fn f);
  explicit operator bool() const { return scenario_ != nullptr; }
  nv::nvmlReturn_t status() const { return nv::kErrorUninitialized; }
  const scenario& sc() const { return *scenario_; }

 private:
  const scenario* scenario_;
};

// Prologue of an entry point that takes a device handle: validates the handle, applies the
// device's latency and the `lost` fault, and refuses MIG handles unless the call accepts them.
class device_call {
 public:
  enum class mig_policy { refuse, accept };
  device_call(fn f, nv::nvmlDevice_t handle, mig_policy policy = mig_policy::refuse);

  explicit operator bool() const { return status_ == nv::kSuccess; }
  nv::nvmlReturn_t status() const { return status_; }
  const scenario& sc() const { return *scenario_; }
  device& gpu() const { return *slot_->gpu; }
  const mig_device* mig() const { return slot_->mig; }
  double t() const { return t_; }  // scenario time of the call, after its latency
  // The device's health at the call's time (its `changes` applied).
  const device_health& health() const { return slot_->gpu->health_at(t_); }

 private:
  nv::nvmlReturn_t status_ = nv::kSuccess;
  const scenario* scenario_ = nullptr;
  const handle_slot* slot_ = nullptr;
  double t_ = 0.0;
};

}  // namespace fake_nvml
