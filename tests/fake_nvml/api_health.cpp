// Utilisation, memory, temperatures, clocks, fans, ECC and PCIe: constants from the device's
// `health` (health.hpp), shaped by the quirks real drivers have (MIG, versioned structs).

#include <algorithm>

#include "api_util.hpp"
#include "nvml_exports.hpp"

namespace joules::nvml {
namespace {

using fake_nvml::device_call;
using fake_nvml::fn;
using mig = fake_nvml::device_call::mig_policy;

// Memory of a GPU or of one MIG device: processes' memory counts as used.
struct memory_state {
  unsigned long long total = 0, reserved = 0, used = 0;
};

memory_state memory_of(const device_call& call) {
  memory_state m;
  if (const fake_nvml::mig_device* g = call.mig(); g != nullptr) {
    m.total = g->memory_total_bytes;
    m.used = g->memory_used_bytes;
    for (const fake_nvml::process& p : g->processes)
      m.used += p.used_memory_bytes;
  } else {
    const fake_nvml::device_health& h = call.health();
    m.total = h.memory_total_bytes;
    m.reserved = h.memory_reserved_bytes;
    m.used = h.memory_used_bytes;
    for (const fake_nvml::process& p : call.gpu().processes_at(call.t(), /*graphics=*/false))
      m.used += p.used_memory_bytes;
  }
  m.used = std::min(m.used, m.total - m.reserved);
  return m;
}

nvmlReturn_t clock_of(const unsigned int (&mhz)[4], unsigned int type, unsigned int* clock) {
  if (clock == nullptr || type >= 4) return kErrorInvalidArgument;
  *clock = mhz[type];
  return kSuccess;
}

nvmlReturn_t event_reasons(fn f, nvmlDevice_t device, unsigned long long* reasons) {
  const device_call call(f, device);
  if (!call) return call.status();
  if (reasons == nullptr) return kErrorInvalidArgument;
  *reasons = call.health().clocks_event_reasons;
  if (call.gpu().power->capped_at(call.t())) *reasons |= kClocksEventSwPowerCap;
  return kSuccess;
}

nvmlReturn_t uint_value(fn f, nvmlDevice_t device, unsigned int* out,
                        unsigned int fake_nvml::device_health::*member) {
  const device_call call(f, device);
  if (!call) return call.status();
  if (out == nullptr) return kErrorInvalidArgument;
  *out = call.health().*member;
  return kSuccess;
}

}  // namespace

extern "C" nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                      nvmlUtilization_t* utilization) {
  const device_call call(fn::nvmlDeviceGetUtilizationRates, device);
  if (!call) return call.status();
  if (utilization == nullptr) return kErrorInvalidArgument;
  if (call.gpu().mig_enabled) return kErrorNotSupported;  // nvml.h:7075
  utilization->gpu = call.health().gpu_util_percent;
  utilization->memory = call.health().memory_util_percent;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t device,
                                                        unsigned int* utilization,
                                                        unsigned int* samplingPeriodUs) {
  const device_call call(fn::nvmlDeviceGetEncoderUtilization, device);
  if (!call) return call.status();
  if (utilization == nullptr || samplingPeriodUs == nullptr) return kErrorInvalidArgument;
  *utilization = call.health().encoder_util_percent;
  *samplingPeriodUs = 167000;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t device,
                                                        unsigned int* utilization,
                                                        unsigned int* samplingPeriodUs) {
  const device_call call(fn::nvmlDeviceGetDecoderUtilization, device);
  if (!call) return call.status();
  if (utilization == nullptr || samplingPeriodUs == nullptr) return kErrorInvalidArgument;
  *utilization = call.health().decoder_util_percent;
  *samplingPeriodUs = 167000;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  const device_call call(fn::nvmlDeviceGetMemoryInfo, device, mig::accept);
  if (!call) return call.status();
  if (memory == nullptr) return kErrorInvalidArgument;
  // v1 counts reserved memory as used (docs/nvml-notes.md §8.1).
  const memory_state m = memory_of(call);
  memory->total = m.total;
  memory->used = m.used + m.reserved;
  memory->free = m.total - memory->used;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  const device_call call(fn::nvmlDeviceGetMemoryInfo_v2, device, mig::accept);
  if (!call) return call.status();
  if (memory == nullptr) return kErrorInvalidArgument;
  // A bare `2` instead of nvmlMemory_v2 gets FUNCTION_NOT_FOUND from real drivers
  // (docs/nvml-notes.md §5.7).
  if (memory->version != kMemoryV2Version) return kErrorFunctionNotFound;
  const memory_state m = memory_of(call);
  memory->total = m.total;
  memory->reserved = m.reserved;
  memory->used = m.used;
  memory->free = m.total - m.reserved - m.used;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, unsigned int sensorType,
                                                 unsigned int* temp) {
  const device_call call(fn::nvmlDeviceGetTemperature, device);
  if (!call) return call.status();
  if (temp == nullptr || sensorType != kTemperatureGpu) return kErrorInvalidArgument;
  *temp = call.health().temperature_c;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t device,
                                                  nvmlTemperature_v1_t* temperature) {
  const device_call call(fn::nvmlDeviceGetTemperatureV, device);
  if (!call) return call.status();
  if (temperature == nullptr) return kErrorInvalidArgument;
  if (temperature->version != kTemperatureV1Version) return kErrorArgumentVersionMismatch;
  if (temperature->sensorType != kTemperatureGpu) return kErrorInvalidArgument;
  temperature->temperature = static_cast<int>(call.health().temperature_c);
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t device,
                                                          unsigned int thresholdType,
                                                          unsigned int* temp) {
  const device_call call(fn::nvmlDeviceGetTemperatureThreshold, device);
  if (!call) return call.status();
  if (temp == nullptr) return kErrorInvalidArgument;
  const fake_nvml::device_health& h = call.health();
  switch (thresholdType) {
    case kTemperatureThresholdShutdown:
      *temp = h.shutdown_temperature_c;
      return kSuccess;
    case kTemperatureThresholdSlowdown:
      *temp = h.slowdown_temperature_c;
      return kSuccess;
    case kTemperatureThresholdMemMax:
      *temp = h.memory_max_temperature_c;
      return kSuccess;
    case kTemperatureThresholdGpuMax:
      *temp = h.gpu_max_temperature_c;
      return kSuccess;
    default:
      return thresholdType <= 7 ? kErrorNotSupported : kErrorInvalidArgument;
  }
}

extern "C" nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, unsigned int type,
                                               unsigned int* clock) {
  const device_call call(fn::nvmlDeviceGetClockInfo, device);
  if (!call) return call.status();
  return clock_of(call.health().clock_mhz, type, clock);
}

extern "C" nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, unsigned int type,
                                                  unsigned int* clock) {
  const device_call call(fn::nvmlDeviceGetMaxClockInfo, device);
  if (!call) return call.status();
  return clock_of(call.health().max_clock_mhz, type, clock);
}

extern "C" nvmlReturn_t nvmlDeviceGetClock(nvmlDevice_t device, unsigned int clockType,
                                           unsigned int clockId, unsigned int* clockMHz) {
  const device_call call(fn::nvmlDeviceGetClock, device);
  if (!call) return call.status();
  // Clock ids: CURRENT 0, APP_CLOCK_TARGET 1, APP_CLOCK_DEFAULT 2, CUSTOMER_BOOST_MAX 3.
  const fake_nvml::device_health& h = call.health();
  if (clockId > 3) return kErrorInvalidArgument;
  return clock_of(clockId <= 1 ? h.clock_mhz : h.max_clock_mhz, clockType, clockMHz);
}

extern "C" nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(
    nvmlDevice_t device, unsigned long long* clocksEventReasons) {
  return event_reasons(fn::nvmlDeviceGetCurrentClocksEventReasons, device, clocksEventReasons);
}

extern "C" nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(
    nvmlDevice_t device, unsigned long long* clocksThrottleReasons) {
  return event_reasons(fn::nvmlDeviceGetCurrentClocksThrottleReasons, device,
                       clocksThrottleReasons);
}

extern "C" nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t device, unsigned int* speed) {
  const device_call call(fn::nvmlDeviceGetFanSpeed, device);
  if (!call) return call.status();
  if (speed == nullptr) return kErrorInvalidArgument;
  if (call.health().fan_count == 0) return kErrorNotSupported;
  *speed = call.health().fan_speed_percent;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetNumFans(nvmlDevice_t device, unsigned int* numFans) {
  return uint_value(fn::nvmlDeviceGetNumFans, device, numFans,
                    &fake_nvml::device_health::fan_count);
}

extern "C" nvmlReturn_t nvmlDeviceGetFanSpeed_v2(nvmlDevice_t device, unsigned int fan,
                                                 unsigned int* speed) {
  const device_call call(fn::nvmlDeviceGetFanSpeed_v2, device);
  if (!call) return call.status();
  if (speed == nullptr) return kErrorInvalidArgument;
  if (call.health().fan_count == 0) return kErrorNotSupported;
  if (fan >= call.health().fan_count) return kErrorInvalidArgument;
  *speed = call.health().fan_speed_percent;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, unsigned int* mode) {
  const device_call call(fn::nvmlDeviceGetPersistenceMode, device);
  if (!call) return call.status();
  if (mode == nullptr) return kErrorInvalidArgument;
  *mode = call.health().persistence_mode ? kFeatureEnabled : kFeatureDisabled;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, unsigned int* current,
                                             unsigned int* pending) {
  const device_call call(fn::nvmlDeviceGetEccMode, device);
  if (!call) return call.status();
  if (current == nullptr || pending == nullptr) return kErrorInvalidArgument;
  *current = *pending = call.health().ecc_enabled ? kFeatureEnabled : kFeatureDisabled;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, unsigned int errorType,
                                                    unsigned int counterType,
                                                    unsigned long long* eccCounts) {
  const device_call call(fn::nvmlDeviceGetTotalEccErrors, device);
  if (!call) return call.status();
  if (eccCounts == nullptr || errorType > kMemoryErrorUncorrected || counterType > kAggregateEcc) {
    return kErrorInvalidArgument;
  }
  const fake_nvml::device_health& h = call.health();
  if (!h.ecc_enabled) return kErrorNotSupported;
  if (counterType == kVolatileEcc) {
    *eccCounts = errorType == kMemoryErrorCorrected ? h.ecc_corrected : h.ecc_uncorrected;
  } else {
    *eccCounts = errorType == kMemoryErrorCorrected ? h.ecc_corrected_aggregate
                                                    : h.ecc_uncorrected_aggregate;
  }
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, unsigned int cause,
                                                  unsigned int* pageCount,
                                                  unsigned long long* addresses) {
  const device_call call(fn::nvmlDeviceGetRetiredPages, device);
  if (!call) return call.status();
  if (pageCount == nullptr || cause > kPageRetirementDoubleBit) return kErrorInvalidArgument;
  // Made-up page addresses; `retired_pages` counts double-bit retirements.
  const fake_nvml::device_health& h = call.health();
  const unsigned int n =
      cause == kPageRetirementDoubleBit ? h.retired_pages : h.retired_pages_single_bit;
  if (*pageCount < n) {
    *pageCount = n;
    return kErrorInsufficientSize;
  }
  if (n > 0 && addresses == nullptr) return kErrorInvalidArgument;
  for (unsigned int i = 0; i < n; ++i)
    addresses[i] = 0x100000ULL * (i + 1);
  *pageCount = n;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device,
                                                               unsigned int* isPending) {
  const device_call call(fn::nvmlDeviceGetRetiredPagesPendingStatus, device);
  if (!call) return call.status();
  if (isPending == nullptr) return kErrorInvalidArgument;
  *isPending = call.health().retirement_pending ? kFeatureEnabled : kFeatureDisabled;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corrRows,
                                                  unsigned int* uncRows, unsigned int* isPending,
                                                  unsigned int* failureOccurred) {
  const device_call call(fn::nvmlDeviceGetRemappedRows, device);
  if (!call) return call.status();
  if (corrRows == nullptr || uncRows == nullptr || isPending == nullptr ||
      failureOccurred == nullptr) {
    return kErrorInvalidArgument;
  }
  if (!fake_nvml::remapper_answers(call.gpu())) return kErrorNotSupported;
  const fake_nvml::device_health& h = call.health();
  *corrRows = h.remapped_rows_corrected;
  *uncRows = h.remapped_rows_uncorrected;
  *isPending = h.remap_pending ? 1U : 0U;
  *failureOccurred = h.remap_failure ? 1U : 0U;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device,
                                                            unsigned int* currLinkGen) {
  return uint_value(fn::nvmlDeviceGetCurrPcieLinkGeneration, device, currLinkGen,
                    &fake_nvml::device_health::pcie_generation);
}

extern "C" nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device,
                                                       unsigned int* currLinkWidth) {
  return uint_value(fn::nvmlDeviceGetCurrPcieLinkWidth, device, currLinkWidth,
                    &fake_nvml::device_health::pcie_width);
}

extern "C" nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device,
                                                           unsigned int* maxLinkGen) {
  return uint_value(fn::nvmlDeviceGetMaxPcieLinkGeneration, device, maxLinkGen,
                    &fake_nvml::device_health::pcie_max_generation);
}

extern "C" nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device,
                                                      unsigned int* maxLinkWidth) {
  return uint_value(fn::nvmlDeviceGetMaxPcieLinkWidth, device, maxLinkWidth,
                    &fake_nvml::device_health::pcie_max_width);
}

extern "C" nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device, unsigned int* value) {
  return uint_value(fn::nvmlDeviceGetPcieReplayCounter, device, value,
                    &fake_nvml::device_health::pcie_replay_counter);
}

extern "C" nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, unsigned int counter,
                                                    unsigned int* value) {
  const device_call call(fn::nvmlDeviceGetPcieThroughput, device);
  if (!call) return call.status();
  if (value == nullptr || counter > kPcieUtilRxBytes) return kErrorInvalidArgument;
  const fake_nvml::device_health& h = call.health();
  *value = counter == kPcieUtilTxBytes ? h.pcie_tx_kib_s : h.pcie_rx_kib_s;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                                 unsigned int* isActive) {
  const device_call call(fn::nvmlDeviceGetNvLinkState, device);
  if (!call) return call.status();
  const fake_nvml::device_health& h = call.health();
  if (h.nvlink_links == 0) return kErrorNotSupported;
  if (isActive == nullptr || link >= h.nvlink_links) return kErrorInvalidArgument;
  *isActive = (h.nvlink_down_mask >> link & 1U) != 0 ? kFeatureDisabled : kFeatureEnabled;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t device, unsigned int link,
                                                        unsigned int counter,
                                                        unsigned long long* counterValue) {
  const device_call call(fn::nvmlDeviceGetNvLinkErrorCounter, device);
  if (!call) return call.status();
  const fake_nvml::device_health& h = call.health();
  if (h.nvlink_links == 0) return kErrorNotSupported;
  if (counterValue == nullptr || link >= h.nvlink_links) return kErrorInvalidArgument;
  unsigned long long total = 0;
  switch (counter) {
    case kNvlinkErrorDlReplay:
      total = h.nvlink_replay_errors;
      break;
    case kNvlinkErrorDlRecovery:
      total = h.nvlink_recovery_errors;
      break;
    case kNvlinkErrorDlCrcFlit:
      total = h.nvlink_crc_flit_errors;
      break;
    case kNvlinkErrorDlCrcData:
      total = h.nvlink_crc_data_errors;
      break;
    default:
      return kErrorInvalidArgument;
  }
  *counterValue = link == h.nvlink_errors_link ? total : 0;
  return kSuccess;
}

}  // namespace joules::nvml
