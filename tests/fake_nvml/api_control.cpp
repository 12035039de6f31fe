// Device settings the peers read or change (codecarbon's compute mode, zeus' persistence mode,
// clock locks and Grace Hopper probe).  Clock locks are accepted and forgotten: a scenario's
// power function is a script, not a model of clocks.

#include "api_util.hpp"
#include "nvml_exports.hpp"

namespace joules::nvml {
namespace {

using fake_nvml::device_call;
using fake_nvml::fn;

// Changing a setting needs the privilege that limits.settable stands for.
nvmlReturn_t privileged(fn f, nvmlDevice_t device) {
  const device_call call(f, device);
  if (!call) return call.status();
  return call.gpu().limit_settable ? kSuccess : kErrorNoPermission;
}

nvmlReturn_t locked_range(fn f, nvmlDevice_t device, unsigned int min_mhz, unsigned int max_mhz,
                          unsigned int clock_type) {
  const device_call call(f, device);
  if (!call) return call.status();
  if (min_mhz > max_mhz || max_mhz > call.health().max_clock_mhz[clock_type]) {
    return kErrorInvalidArgument;
  }
  return call.gpu().limit_settable ? kSuccess : kErrorNoPermission;
}

// The supported clocks: from the maximum down in 15 MHz steps to 210 MHz (H100-like).
nvmlReturn_t clock_list(unsigned int max_mhz, unsigned int* count, unsigned int* clocks) {
  if (count == nullptr) return kErrorInvalidArgument;
  constexpr unsigned int kStepMhz = 15, kLowestMhz = 210;
  const unsigned int n = max_mhz < kLowestMhz ? 1 : (max_mhz - kLowestMhz) / kStepMhz + 1;
  if (*count < n) {
    *count = n;
    return kErrorInsufficientSize;
  }
  if (clocks == nullptr) return kErrorInvalidArgument;
  for (unsigned int i = 0; i < n; ++i)
    clocks[i] = max_mhz - i * kStepMhz;
  *count = n;
  return kSuccess;
}

}  // namespace

extern "C" nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, unsigned int* mode) {
  const device_call call(fn::nvmlDeviceGetComputeMode, device);
  if (!call) return call.status();
  if (mode == nullptr) return kErrorInvalidArgument;
  *mode = kComputeModeDefault;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceSetPersistenceMode(nvmlDevice_t device, unsigned int mode) {
  if (mode > kFeatureEnabled) {
    fake_nvml::count_call(fn::nvmlDeviceSetPersistenceMode);
    return kErrorInvalidArgument;
  }
  // Persistence stays as the scenario says: the setting is accepted, not simulated.
  return privileged(fn::nvmlDeviceSetPersistenceMode, device);
}

extern "C" nvmlReturn_t nvmlDeviceGetSupportedMemoryClocks(nvmlDevice_t device, unsigned int* count,
                                                           unsigned int* clocksMHz) {
  const device_call call(fn::nvmlDeviceGetSupportedMemoryClocks, device);
  if (!call) return call.status();
  // One memory clock, as HBM boards have.
  if (count == nullptr) return kErrorInvalidArgument;
  if (*count < 1) {
    *count = 1;
    return kErrorInsufficientSize;
  }
  if (clocksMHz == nullptr) return kErrorInvalidArgument;
  clocksMHz[0] = call.health().max_clock_mhz[kClockMem];
  *count = 1;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetSupportedGraphicsClocks(nvmlDevice_t device,
                                                             unsigned int memoryClockMHz,
                                                             unsigned int* count,
                                                             unsigned int* clocksMHz) {
  const device_call call(fn::nvmlDeviceGetSupportedGraphicsClocks, device);
  if (!call) return call.status();
  if (memoryClockMHz != call.health().max_clock_mhz[kClockMem]) return kErrorNotFound;
  return clock_list(call.health().max_clock_mhz[kClockGraphics], count, clocksMHz);
}

extern "C" nvmlReturn_t nvmlDeviceSetGpuLockedClocks(nvmlDevice_t device,
                                                     unsigned int minGpuClockMHz,
                                                     unsigned int maxGpuClockMHz) {
  return locked_range(fn::nvmlDeviceSetGpuLockedClocks, device, minGpuClockMHz, maxGpuClockMHz,
                      kClockGraphics);
}

extern "C" nvmlReturn_t nvmlDeviceResetGpuLockedClocks(nvmlDevice_t device) {
  return privileged(fn::nvmlDeviceResetGpuLockedClocks, device);
}

extern "C" nvmlReturn_t nvmlDeviceSetMemoryLockedClocks(nvmlDevice_t device,
                                                        unsigned int minMemClockMHz,
                                                        unsigned int maxMemClockMHz) {
  return locked_range(fn::nvmlDeviceSetMemoryLockedClocks, device, minMemClockMHz, maxMemClockMHz,
                      kClockMem);
}

extern "C" nvmlReturn_t nvmlDeviceResetMemoryLockedClocks(nvmlDevice_t device) {
  return privileged(fn::nvmlDeviceResetMemoryLockedClocks, device);
}

extern "C" nvmlReturn_t nvmlDeviceGetC2cModeInfoV(nvmlDevice_t device,
                                                  nvmlC2cModeInfo_v1_t* c2cModeInfo) {
  const device_call call(fn::nvmlDeviceGetC2cModeInfoV, device);
  if (!call) return call.status();
  if (c2cModeInfo == nullptr) return kErrorInvalidArgument;
  // No simulated board has a Grace CPU; real x86 boards answer NOT_SUPPORTED, not "disabled".
  return kErrorNotSupported;
}

}  // namespace joules::nvml
