// The entry points of the fake libze_loader.so.1 (README.md): Sysman over the scenario's devices,
// and the three core calls of the older way to reach it.

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ze_exports.hpp"
#include "ze_runtime.hpp"

namespace joules::ze {
namespace {

using fake_ze::call;
using fake_ze::component;
using kind = fake_ze::component::kind;
using fake_gpu::reading_kind;

// The driver handle: there is one driver.
int g_driver = 0;

// Level Zero's two-call enumeration: the count when the array is null, else up to *pCount
// handles and the count written.
ze_result_t list(const std::vector<void*>& all, std::uint32_t* count, void** out) {
  if (count == nullptr) return 0x78000007;  // ZE_RESULT_ERROR_INVALID_NULL_POINTER
  const auto n = static_cast<std::uint32_t>(all.size());
  if (out == nullptr || *count == 0) {
    *count = n;
    return kSuccess;
  }
  *count = std::min(*count, n);
  std::copy(all.begin(), all.begin() + *count, out);
  return kSuccess;
}

// Every component of one kind that belongs to the device behind `device_handle`.
ze_result_t components(void* device_handle, kind k, std::uint32_t* count, void** out) {
  const call c(device_handle, kind::device);
  if (c.status() != call::state::ok) return c.result();
  std::vector<void*> mine;
  for (const auto& x : fake_ze::sysman()->components) {
    if (x.owner == &c.dev() && x.what == k) mine.push_back(fake_ze::sysman()->handle(x));
  }
  return list(mine, count, out);
}

// The sustained limit's averaging window the fake reports (Tau; Intel's default is 28 s).
constexpr std::int32_t kZeSustainedIntervalMs = 28000;

// Whether this power domain's limits may be asked about: the device-level one of a device whose
// limits are supported.
bool ze_controls_limit(const call& c) {
  return !c.comp().on_subdevice && c.dev().limits_supported;
}

// Sets the sustained limit to `mw`, as a driver checks it.
ze_result_t ze_set_sustained(const call& c, std::int32_t mw) {
  const auto& d = c.dev();
  if (!d.limit_settable) return kErrorInsufficientPermissions;
  if (mw <= 0 || (d.min_limit_mw > 0 && mw < d.min_limit_mw) || mw > d.max_limit_mw)
    return kErrorInvalidArgument;
  if (!d.power->set_limit(c.t(), static_cast<unsigned>(mw))) return kErrorUnknown;
  fake_ze::limits_changed();
  return kSuccess;
}

std::vector<void*> device_handles(const fake_ze::scenario& s) {
  std::vector<void*> out;
  for (const auto& x : s.components) {
    if (x.what == kind::device) out.push_back(s.handle(x));
  }
  return out;
}

template <std::size_t N>
void copy(char (&dst)[N], const std::string& s) {
  const std::size_t n = std::min(s.size(), N - 1);
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

}  // namespace

extern "C" {

ze_result_t zeInit(std::uint32_t flags) {
  (void)flags;
  return static_cast<ze_result_t>(fake_ze::init(false));
}

ze_result_t zeDriverGet(std::uint32_t* pCount, ze_driver_handle_t* phDrivers) {
  if (fake_ze::loaded() == nullptr) return kErrorUninitialized;
  return list({&g_driver}, pCount, phDrivers);
}

ze_result_t zeDeviceGet(ze_driver_handle_t hDriver, std::uint32_t* pCount,
                        ze_device_handle_t* phDevices) {
  const auto* s = fake_ze::loaded();
  if (s == nullptr) return kErrorUninitialized;
  if (hDriver != &g_driver) return 0x78000005;
  // The core API lists the devices ZE_AFFINITY_MASK leaves (cards: N, or N.M for a stack of N).
  const char* mask = std::getenv("ZE_AFFINITY_MASK");
  const auto all = device_handles(*s);
  if (mask == nullptr || mask[0] == '\0') return list(all, pCount, phDevices);
  std::vector<void*> kept;
  for (const char* p = mask; *p != '\0';) {
    char* end = nullptr;
    const unsigned long n = std::strtoul(p, &end, 10);
    if (end != p && n < all.size() && std::find(kept.begin(), kept.end(), all[n]) == kept.end())
      kept.push_back(all[n]);
    p = std::strchr(p, ',');
    if (p == nullptr) break;
    ++p;
  }
  return list(kept, pCount, phDevices);
}

ze_result_t zesInit(std::uint32_t flags) {
  if (flags != 0) return 0x7800000c;  // ZE_RESULT_ERROR_INVALID_ENUMERATION
  return static_cast<ze_result_t>(fake_ze::init(true));
}

ze_result_t zesDriverGet(std::uint32_t* pCount, zes_driver_handle_t* phDrivers) {
  if (fake_ze::sysman() == nullptr) return kErrorUninitialized;
  return list({&g_driver}, pCount, phDrivers);
}

ze_result_t zesDeviceGet(zes_driver_handle_t hDriver, std::uint32_t* pCount,
                         zes_device_handle_t* phDevices) {
  const auto* s = fake_ze::sysman();
  if (s == nullptr) return kErrorUninitialized;
  if (hDriver != &g_driver) return 0x78000005;
  return list(device_handles(*s), pCount, phDevices);
}

ze_result_t zesDeviceGetProperties(zes_device_handle_t hDevice, zes_device_properties_t* p) {
  const call c(hDevice, kind::device);
  if (c.status() != call::state::ok) return c.result();
  const auto& d = c.dev();
  p->core.type = 1;  // ZE_DEVICE_TYPE_GPU
  p->core.vendorId = 0x8086;
  std::memcpy(p->core.uuid, d.uuid, sizeof d.uuid);
  copy(p->core.name, d.name);
  p->numSubdevices = d.stacks > 1 ? d.stacks : 0;
  copy(p->driverVersion, fake_ze::sysman()->driver_version);
  copy(p->vendorName, "Intel(R) Corporation");
  return kSuccess;
}

ze_result_t zesDevicePciGetProperties(zes_device_handle_t hDevice, zes_pci_properties_t* p) {
  const call c(hDevice, kind::device);
  if (c.status() != call::state::ok) return c.result();
  const auto& d = c.dev();
  p->address = zes_pci_address_t{d.domain, d.bus, d.dev, d.function};
  p->maxSpeed = zes_pci_speed_t{d.state.pcie_max_gen, d.state.pcie_max_width, -1};
  return kSuccess;
}

ze_result_t zesDevicePciGetState(zes_device_handle_t hDevice, zes_pci_state_t* p) {
  const call c(hDevice, kind::device);
  if (c.status() != call::state::ok) return c.result();
  p->status = 1;  // ZES_PCI_LINK_STATUS_GOOD
  p->speed = zes_pci_speed_t{c.dev().state.pcie_gen, c.dev().state.pcie_width, -1};
  return kSuccess;
}

ze_result_t zesDeviceEnumPowerDomains(zes_device_handle_t hDevice, std::uint32_t* pCount,
                                      zes_pwr_handle_t* phPower) {
  return components(hDevice, kind::power, pCount, phPower);
}

ze_result_t zesDeviceGetCardPowerDomain(zes_device_handle_t hDevice, zes_pwr_handle_t* phPower) {
  const call c(hDevice, kind::device);
  if (c.status() != call::state::ok) return c.result();
  // Only a device whose driver names no domain answers: the others say it through the
  // extension (and the call is deprecated).
  if (c.dev().where != fake_ze::domains::unknown) return kErrorUnsupportedFeature;
  for (const auto& x : fake_ze::sysman()->components) {
    if (x.owner == &c.dev() && x.what == kind::power) {
      *phPower = fake_ze::sysman()->handle(x);
      return kSuccess;
    }
  }
  return kErrorUnsupportedFeature;
}

ze_result_t zesPowerGetProperties(zes_pwr_handle_t hPower, zes_power_properties_t* p) {
  const call c(hPower, kind::power);
  if (c.status() != call::state::ok) return c.result();
  const auto& d = c.dev();
  p->onSubdevice = c.comp().on_subdevice ? 1 : 0;
  p->subdeviceId = c.comp().sub;
  p->canControl = !c.comp().on_subdevice && d.limits_supported ? 1 : 0;
  p->defaultLimit = c.comp().on_subdevice ? -1 : d.default_limit_mw;
  p->minLimit = c.comp().on_subdevice ? -1 : d.min_limit_mw;
  p->maxLimit = c.comp().on_subdevice ? -1 : d.max_limit_mw;
  // The extension, when chained, says which level the domain is (spec 1.4).
  auto* ext = static_cast<zes_power_ext_properties_t*>(p->pNext);
  if (ext != nullptr && ext->stype == kStypePowerExtProperties) {
    using fake_ze::domains;
    ext->domain = c.comp().on_subdevice         ? 3U  // ZES_POWER_DOMAIN_STACK
                  : d.where == domains::card    ? kPowerDomainCard
                  : d.where == domains::package ? kPowerDomainPackage
                                                : 0U;  // ZES_POWER_DOMAIN_UNKNOWN
  }
  return kSuccess;
}

ze_result_t zesPowerGetLimits(zes_pwr_handle_t hPower, zes_power_sustained_limit_t* pSustained,
                              void* pBurst, void* pPeak) {
  (void)pBurst;  // none of the fake's devices has a burst or peak limit through this call
  (void)pPeak;
  const call c(hPower, kind::power);
  if (c.status() != call::state::ok) return c.result();
  if (!ze_controls_limit(c)) return kErrorUnsupportedFeature;
  if (pSustained != nullptr) {
    pSustained->enabled = 1;
    pSustained->power = static_cast<std::int32_t>(c.dev().power->limit_mw());
    pSustained->interval = kZeSustainedIntervalMs;
  }
  return kSuccess;
}

ze_result_t zesPowerSetLimits(zes_pwr_handle_t hPower,
                              const zes_power_sustained_limit_t* pSustained, const void* pBurst,
                              const void* pPeak) {
  (void)pBurst;
  (void)pPeak;
  const call c(hPower, kind::power);
  if (c.status() != call::state::ok) return c.result();
  if (!ze_controls_limit(c)) return kErrorUnsupportedFeature;
  if (pSustained == nullptr) return kSuccess;
  return ze_set_sustained(c, pSustained->power);
}

ze_result_t zesPowerGetLimitsExt(zes_pwr_handle_t hPower, std::uint32_t* pCount,
                                 zes_power_limit_ext_desc_t* pSustained) {
  const call c(hPower, kind::power);
  if (c.status() != call::state::ok) return c.result();
  if (!ze_controls_limit(c) || !c.dev().limits_ext) return kErrorUnsupportedFeature;
  if (pCount == nullptr) return 0x78000007;  // ZE_RESULT_ERROR_INVALID_NULL_POINTER
  // Two limits, as a discrete GPU's card domain has: peak (PL4) first, then sustained (PL1).
  constexpr std::uint32_t kLimits = 2;
  if (*pCount == 0 || pSustained == nullptr) {
    *pCount = kLimits;
    return kSuccess;
  }
  *pCount = std::min(*pCount, kLimits);
  for (std::uint32_t k = 0; k < *pCount; ++k) {
    zes_power_limit_ext_desc_t& d = pSustained[k];
    const bool sustained = k == 1;
    d.level = sustained ? kPowerLevelSustained : 3U;  // ZES_POWER_LEVEL_PEAK
    d.source = 0;                                     // ZES_POWER_SOURCE_ANY
    d.limitUnit = kLimitUnitPower;
    d.enabledStateLocked = 1;
    d.enabled = 1;
    d.intervalValueLocked = sustained ? 0 : 1;
    d.interval = sustained ? kZeSustainedIntervalMs : 0;
    d.limitValueLocked = 0;
    d.limit = sustained ? static_cast<std::int32_t>(c.dev().power->limit_mw())
                        : c.dev().max_limit_mw + c.dev().max_limit_mw / 4;
  }
  return kSuccess;
}

ze_result_t zesPowerSetLimitsExt(zes_pwr_handle_t hPower, std::uint32_t* pCount,
                                 zes_power_limit_ext_desc_t* pSustained) {
  const call c(hPower, kind::power);
  if (c.status() != call::state::ok) return c.result();
  if (!ze_controls_limit(c) || !c.dev().limits_ext) return kErrorUnsupportedFeature;
  if (pCount == nullptr) return 0x78000007;
  if (*pCount > 0 && pSustained == nullptr) return 0x78000007;
  for (std::uint32_t k = 0; k < *pCount; ++k) {
    const zes_power_limit_ext_desc_t& d = pSustained[k];
    if (d.stype != kStypePowerLimitExtDesc) return kErrorInvalidArgument;
    if (d.level != kPowerLevelSustained) continue;  // the peak limit is accepted, not simulated
    if (d.limitUnit != kLimitUnitPower) return kErrorInvalidArgument;
    if (const ze_result_t rc = ze_set_sustained(c, d.limit); rc != kSuccess) return rc;
  }
  return kSuccess;
}

ze_result_t zesPowerGetEnergyCounter(zes_pwr_handle_t hPower, zes_power_energy_counter_t* e) {
  const call c(hPower, kind::power);
  if (c.status() != call::state::ok) return c.result();
  const auto& d = c.dev();
  if (!d.counter_supported) return kErrorUnsupportedFeature;
  if (const auto f = c.fault(reading_kind::energy); f != 0) return static_cast<ze_result_t>(f);
  const unsigned share = c.comp().on_subdevice ? d.stacks : 1;
  e->energy = d.energy_uj(c.t(), share);
  e->timestamp = static_cast<std::uint64_t>(std::max(0.0, c.t()) * 1e6);
  return kSuccess;
}

ze_result_t zesDeviceEnumFrequencyDomains(zes_device_handle_t hDevice, std::uint32_t* pCount,
                                          zes_freq_handle_t* phFrequency) {
  return components(hDevice, kind::frequency, pCount, phFrequency);
}

ze_result_t zesFrequencyGetProperties(zes_freq_handle_t hFrequency, zes_freq_properties_t* p) {
  const call c(hFrequency, kind::frequency);
  if (c.status() != call::state::ok) return c.result();
  const bool gpu = c.comp().sub == kFreqDomainGpu;
  p->type = c.comp().sub;
  p->min = 0;
  p->max = gpu ? c.dev().state.gpu_max_mhz : c.dev().state.mem_max_mhz;
  return kSuccess;
}

ze_result_t zesFrequencyGetState(zes_freq_handle_t hFrequency, zes_freq_state_t* s) {
  const call c(hFrequency, kind::frequency);
  if (c.status() != call::state::ok) return c.result();
  const bool gpu = c.comp().sub == kFreqDomainGpu;
  s->actual = gpu ? c.dev().state.gpu_mhz : c.dev().state.mem_mhz;
  s->request = s->actual;
  s->throttleReasons = gpu ? c.dev().state.throttle_reasons : 0;
  return kSuccess;
}

ze_result_t zesDeviceEnumTemperatureSensors(zes_device_handle_t hDevice, std::uint32_t* pCount,
                                            zes_temp_handle_t* phTemperature) {
  return components(hDevice, kind::temperature, pCount, phTemperature);
}

ze_result_t zesTemperatureGetProperties(zes_temp_handle_t hTemperature, zes_temp_properties_t* p) {
  const call c(hTemperature, kind::temperature);
  if (c.status() != call::state::ok) return c.result();
  p->type = c.comp().sub;
  p->maxTemperature = c.dev().state.max_temperature_c;
  return kSuccess;
}

ze_result_t zesTemperatureGetState(zes_temp_handle_t hTemperature, double* pTemperature) {
  const call c(hTemperature, kind::temperature);
  if (c.status() != call::state::ok) return c.result();
  *pTemperature = c.comp().sub == kTempSensorsGpu ? c.dev().state.temperature_c
                                                  : c.dev().state.memory_temperature_c;
  return kSuccess;
}

ze_result_t zesDeviceEnumMemoryModules(zes_device_handle_t hDevice, std::uint32_t* pCount,
                                       zes_mem_handle_t* phMemory) {
  return components(hDevice, kind::memory, pCount, phMemory);
}

ze_result_t zesMemoryGetState(zes_mem_handle_t hMemory, zes_mem_state_t* s) {
  const call c(hMemory, kind::memory);
  if (c.status() != call::state::ok) return c.result();
  s->health = 1;  // ZES_MEM_HEALTH_OK
  s->size = c.dev().state.memory_total_bytes;
  s->free = s->size - std::min(s->size, c.dev().state.memory_used_bytes);
  return kSuccess;
}

ze_result_t zesDeviceEnumEngineGroups(zes_device_handle_t hDevice, std::uint32_t* pCount,
                                      zes_engine_handle_t* phEngine) {
  return components(hDevice, kind::engine, pCount, phEngine);
}

ze_result_t zesEngineGetProperties(zes_engine_handle_t hEngine, zes_engine_properties_t* p) {
  const call c(hEngine, kind::engine);
  if (c.status() != call::state::ok) return c.result();
  p->type = kEngineGroupAll;
  return kSuccess;
}

ze_result_t zesEngineGetActivity(zes_engine_handle_t hEngine, zes_engine_stats_t* s) {
  const call c(hEngine, kind::engine);
  if (c.status() != call::state::ok) return c.result();
  // Active at the scenario's utilisation since time 0, in µs.
  const double us = std::max(0.0, c.t()) * 1e6;
  s->timestamp = static_cast<std::uint64_t>(us);
  s->activeTime = static_cast<std::uint64_t>(us * c.dev().state.utilization_percent / 100.0);
  return kSuccess;
}

ze_result_t zesDeviceEnumRasErrorSets(zes_device_handle_t hDevice, std::uint32_t* pCount,
                                      zes_ras_handle_t* phRas) {
  return components(hDevice, kind::ras, pCount, phRas);
}

ze_result_t zesRasGetProperties(zes_ras_handle_t hRas, zes_ras_properties_t* p) {
  const call c(hRas, kind::ras);
  if (c.status() != call::state::ok) return c.result();
  p->type = c.comp().sub;
  return kSuccess;
}

ze_result_t zesRasGetState(zes_ras_handle_t hRas, ze_bool_t clear, zes_ras_state_t* s) {
  const call c(hRas, kind::ras);
  if (c.status() != call::state::ok) return c.result();
  if (clear != 0) return kErrorInsufficientPermissions;  // clearing needs root
  std::fill(std::begin(s->category), std::end(s->category), 0);
  s->category[0] = c.comp().sub == kRasCorrectable ? c.dev().state.ras_correctable
                                                   : c.dev().state.ras_uncorrectable;
  return kSuccess;
}

}  // extern "C"
}  // namespace joules::ze
