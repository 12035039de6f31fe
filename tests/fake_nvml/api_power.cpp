// Energy, power readings, field values and power limits: the README's energy model.

#include <algorithm>
#include <random>

#include "api_util.hpp"
#include "nvml_exports.hpp"
#include "state_file.hpp"

namespace joules::nvml {
namespace {

using fake_nvml::device_call;
using fake_nvml::fn;
using fake_nvml::reading_kind;

nvmlReturn_t counter_value(const fake_nvml::device& d, double t, unsigned long long* mj) {
  if (const nvmlReturn_t rc =
          static_cast<nvmlReturn_t>(d.faults.reading_status(reading_kind::energy, t, kSuccess));
      rc != kSuccess) {
    return rc;
  }
  *mj = d.counter_mj(t);
  return kSuccess;
}

nvmlReturn_t energy_reading(const fake_nvml::device& d, double t, unsigned long long* mj) {
  if (!d.energy_counter.supported) return kErrorNotSupported;
  fake_nvml::count_energy_read();
  // The driver's work on the CPU, half before the value is taken and half after.
  const unsigned int cpu_us = d.energy_counter.read_cpu_us;
  if (d.energy_counter.read_wait_us > 0) {
    static thread_local std::minstd_rand rng(std::random_device{}());
    fake_nvml::sleep_us(static_cast<unsigned int>(rng() % (d.energy_counter.read_wait_us + 1)));
    t = fake_nvml::now_s();
  }
  if (cpu_us > 0) {
    fake_nvml::spin_energy_read(cpu_us / 2);
    t = fake_nvml::now_s();
  }
  const nvmlReturn_t rc = counter_value(d, t, mj);
  // Only a counter that costs CPU spins: reading the thread's CPU clock is itself a system call.
  if (cpu_us > 0) fake_nvml::spin_energy_read(cpu_us - cpu_us / 2);
  return rc;
}

nvmlReturn_t power_reading(const fake_nvml::device& d, const fake_nvml::reading_config& r, double t,
                           unsigned int* mw) {
  if (!r.supported) return kErrorNotSupported;
  if (const nvmlReturn_t rc =
          static_cast<nvmlReturn_t>(d.faults.reading_status(reading_kind::power, t, kSuccess));
      rc != kSuccess) {
    return rc;
  }
  *mw = d.reading_mw(r, t);
  return kSuccess;
}

void set_uint(nvmlFieldValue_t& v, unsigned int value) {
  v.valueType = kValueTypeUnsignedInt;
  v.value.uiVal = value;
}

void set_ull(nvmlFieldValue_t& v, unsigned long long value) {
  v.valueType = kValueTypeUnsignedLongLong;
  v.value.ullVal = value;
}

// One field of nvmlDeviceGetFieldValues; the status goes into v.nvmlReturn.
void fill_field(const fake_nvml::device& d, double t, nvmlFieldValue_t& v) {
  // Ids the imitated driver's header did not have yet (185-192 arrived in 12.2).
  const bool power_fields = fake_nvml::driver_level() >= fake_nvml::kLevelPowerFields;
  const bool power_scope = v.fieldId < kFiDevPowerAverage || v.fieldId > kFiDevPowerRequestedLimit;
  const fake_nvml::device_health& h = d.health_at(t);
  v.nvmlReturn = kSuccess;
  if (!power_scope && (!power_fields || v.scopeId != kPowerScopeGpu)) {
    v.nvmlReturn = kErrorNotSupported;  // module and memory scopes need a Grace board
    return;
  }
  const auto& missing = d.fields_not_supported;
  if (std::find(missing.begin(), missing.end(), v.fieldId) != missing.end()) {
    v.nvmlReturn = kErrorNotSupported;
    return;
  }
  unsigned long long ull = 0;
  unsigned int ui = 0;
  switch (v.fieldId) {
    case kFiDevTotalEnergyConsumption:
    case kFiDevEnergy:
      v.nvmlReturn = energy_reading(d, t, &ull);
      set_ull(v, ull);
      return;
    case kFiDevPowerAverage:
      v.nvmlReturn = power_reading(d, d.power_average, t, &ui);
      set_uint(v, ui);
      return;
    case kFiDevPowerInstant:
      v.nvmlReturn = power_reading(d, d.power_instant, t, &ui);
      set_uint(v, ui);
      return;
    case kFiDevPowerMinLimit:
      if (!d.limits_supported) break;
      return set_uint(v, d.min_limit_mw);
    case kFiDevPowerMaxLimit:
      if (!d.limits_supported) break;
      return set_uint(v, d.max_limit_mw);
    case kFiDevPowerDefaultLimit:
      return set_uint(v, d.default_limit_mw);
    case kFiDevPowerCurrentLimit:
    case kFiDevPowerRequestedLimit:
      return set_uint(v, d.power->limit_mw());
    case kFiDevEccSbeVolTotal:
      if (!h.ecc_enabled) break;
      return set_ull(v, h.ecc_corrected);
    case kFiDevEccSbeAggTotal:
      if (!h.ecc_enabled) break;
      return set_ull(v, h.ecc_corrected_aggregate);
    case kFiDevEccDbeVolTotal:
      if (!h.ecc_enabled) break;
      return set_ull(v, h.ecc_uncorrected);
    case kFiDevEccDbeAggTotal:
      if (!h.ecc_enabled) break;
      return set_ull(v, h.ecc_uncorrected_aggregate);
    case kFiDevRetiredSbe:
      return set_uint(v, h.retired_pages_single_bit);
    case kFiDevRetiredDbe:
      return set_uint(v, h.retired_pages);
    case kFiDevRetiredPending:
      return set_uint(v, h.retirement_pending ? kFeatureEnabled : kFeatureDisabled);
    case kFiDevRemappedCor:
    case kFiDevRemappedUnc:
    case kFiDevRemappedPending:
    case kFiDevRemappedFailure: {
      // As nvmlDeviceGetRemappedRows answers.
      if (!fake_nvml::remapper_answers(d)) break;
      const unsigned int values[] = {h.remapped_rows_corrected, h.remapped_rows_uncorrected,
                                     h.remap_pending ? 1U : 0U, h.remap_failure ? 1U : 0U};
      return set_uint(v, values[v.fieldId - kFiDevRemappedCor]);
    }
    case kFiDevMemoryTemp:
      return set_uint(v, h.memory_temperature_c);
    case kFiDevPcieReplayCounter:
      return set_uint(v, h.pcie_replay_counter);
    case kFiDevNvlinkCrcFlitErrorTotal:
    case kFiDevNvlinkCrcDataErrorTotal:
    case kFiDevNvlinkReplayErrorTotal:
    case kFiDevNvlinkRecoveryErrorTotal: {
      if (h.nvlink_links == 0) break;
      const unsigned long long counts[] = {h.nvlink_crc_flit_errors, h.nvlink_crc_data_errors,
                                           h.nvlink_replay_errors, h.nvlink_recovery_errors};
      return set_ull(v, counts[(v.fieldId - kFiDevNvlinkCrcFlitErrorTotal) / 7]);
    }
    case kFiDevPcieCountTxBytes:
    case kFiDevPcieCountRxBytes:
      // Byte counters (12.5+): the rates integrated over scenario time.
      if (!power_fields) break;
      return set_ull(v, d.pcie_bytes(t, v.fieldId == kFiDevPcieCountTxBytes));
    default:
      break;
  }
  v.nvmlReturn = kErrorNotSupported;
}

nvmlReturn_t set_limit(const device_call& call, unsigned int limit_mw) {
  fake_nvml::device& d = call.gpu();
  if (!d.limits_supported) return kErrorNotSupported;
  if (!d.limit_settable) return kErrorNoPermission;
  if (limit_mw < d.min_limit_mw || limit_mw > d.max_limit_mw) return kErrorInvalidArgument;
  // Takes effect at the moment of the call: with clamp_to_limit, P(t) is capped from here on.
  if (!d.power->set_limit(call.t(), limit_mw)) return kErrorUnknown;
  fake_nvml::save_state(call.sc());
  return kSuccess;
}

}  // namespace

extern "C" nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device,
                                                            unsigned long long* energy) {
  const device_call call(fn::nvmlDeviceGetTotalEnergyConsumption, device);
  if (!call) return call.status();
  if (energy == nullptr) return kErrorInvalidArgument;
  return energy_reading(call.gpu(), call.t(), energy);
}

extern "C" nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) {
  const device_call call(fn::nvmlDeviceGetPowerUsage, device);
  if (!call) return call.status();
  if (power == nullptr) return kErrorInvalidArgument;
  return power_reading(call.gpu(), call.gpu().power_usage, call.t(), power);
}

extern "C" nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount,
                                                 nvmlFieldValue_t* values) {
  const device_call call(fn::nvmlDeviceGetFieldValues, device);
  if (!call) return call.status();
  if (valuesCount < 0 || (valuesCount > 0 && values == nullptr)) return kErrorInvalidArgument;
  const long long timestamp = fake_nvml::realtime_us();
  for (int i = 0; i < valuesCount; ++i) {
    nvmlFieldValue_t& v = values[i];
    v.timestamp = timestamp;
    v.latencyUsec = 0;
    fill_field(call.gpu(), call.t(), v);
  }
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device,
                                                          unsigned int* limit) {
  const device_call call(fn::nvmlDeviceGetPowerManagementLimit, device);
  if (!call) return call.status();
  if (limit == nullptr) return kErrorInvalidArgument;
  *limit = call.gpu().power->limit_mw();
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t device,
                                                                     unsigned int* minLimit,
                                                                     unsigned int* maxLimit) {
  const device_call call(fn::nvmlDeviceGetPowerManagementLimitConstraints, device);
  if (!call) return call.status();
  if (minLimit == nullptr || maxLimit == nullptr) return kErrorInvalidArgument;
  if (!call.gpu().limits_supported) return kErrorNotSupported;
  *minLimit = call.gpu().min_limit_mw;
  *maxLimit = call.gpu().max_limit_mw;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t device,
                                                                 unsigned int* defaultLimit) {
  const device_call call(fn::nvmlDeviceGetPowerManagementDefaultLimit, device);
  if (!call) return call.status();
  if (defaultLimit == nullptr) return kErrorInvalidArgument;
  *defaultLimit = call.gpu().default_limit_mw;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int* limit) {
  const device_call call(fn::nvmlDeviceGetEnforcedPowerLimit, device);
  if (!call) return call.status();
  if (limit == nullptr) return kErrorInvalidArgument;
  *limit = call.gpu().power->limit_mw();
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceSetPowerManagementLimit(nvmlDevice_t device, unsigned int limit) {
  const device_call call(fn::nvmlDeviceSetPowerManagementLimit, device);
  if (!call) return call.status();
  return set_limit(call, limit);
}

extern "C" nvmlReturn_t nvmlDeviceSetPowerManagementLimit_v2(nvmlDevice_t device,
                                                             nvmlPowerValue_v2_t* powerValue) {
  const device_call call(fn::nvmlDeviceSetPowerManagementLimit_v2, device);
  if (!call) return call.status();
  if (powerValue == nullptr) return kErrorInvalidArgument;
  if (powerValue->version != kPowerValueV2Version) return kErrorArgumentVersionMismatch;
  if (powerValue->powerScope != kPowerScopeGpu) return kErrorNotSupported;
  return set_limit(call, powerValue->powerValueMw);
}

extern "C" nvmlReturn_t nvmlDeviceGetPowerState(nvmlDevice_t device, unsigned int* pState) {
  const device_call call(fn::nvmlDeviceGetPowerState, device);
  if (!call) return call.status();
  if (pState == nullptr) return kErrorInvalidArgument;
  *pState = call.health().performance_state;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t device, unsigned int* pState) {
  const device_call call(fn::nvmlDeviceGetPerformanceState, device);
  if (!call) return call.status();
  if (pState == nullptr) return kErrorInvalidArgument;
  *pState = call.health().performance_state;
  return kSuccess;
}

}  // namespace joules::nvml
