#include "backends/levelzero/ze_health.hpp"

#include <algorithm>

namespace joules::ze {
namespace {

// Every handle of one kind (count first, then the handles); empty when the call fails.
template <class Fn>
std::vector<void*> all_handles(Fn fn, zes_device_handle_t device) {
  std::uint32_t n = 0;
  if (fn == nullptr || fn(device, &n, nullptr) != kSuccess || n == 0) return {};
  std::vector<void*> out(n);
  if (fn(device, &n, out.data()) != kSuccess) return {};
  out.resize(n);
  return out;
}

}  // namespace

clock_events decode_throttle_reasons(std::uint32_t flags) {
  clock_events e;
  e.sw_power_cap = (flags & (kThrottleAvePowerCap | kThrottleBurstPowerCap)) != 0;
  e.hw_slowdown = (flags & (kThrottleCurrentLimit | kThrottleHwRange)) != 0;
  e.hw_thermal = (flags & kThrottleThermalLimit) != 0;
  e.hw_power_brake = (flags & kThrottlePsuAlert) != 0;
  e.applications_clocks = (flags & kThrottleSwRange) != 0;  // a frequency range software set
  e.raw = (e.applications_clocks ? 0x2U : 0U) | (e.sw_power_cap ? 0x4U : 0U) |
          (e.hw_slowdown ? 0x8U : 0U) | (e.hw_thermal ? 0x40U : 0U) |
          (e.hw_power_brake ? 0x80U : 0U);
  return e;
}

health_reader::health_reader(const entry_points& fn, zes_device_handle_t device)
    : fn_(fn), device_(device) {}

void health_reader::enumerate() {
  enumerated_ = true;
  // Device-level components first: a stack's (onSubdevice) only where the device has none.
  for (void* h : all_handles(fn_.zesDeviceEnumFrequencyDomains, device_)) {
    zes_freq_properties_t p{};
    p.stype = kStypeFreqProperties;
    if (fn_.zesFrequencyGetProperties(h, &p) != kSuccess) continue;
    auto& slot = p.type == kFreqDomainGpu ? gpu_freq_ : mem_freq_;
    if (p.type != kFreqDomainGpu && p.type != kFreqDomainMemory) continue;
    if (slot && p.onSubdevice) continue;
    slot = h;
    (p.type == kFreqDomainGpu ? gpu_max_mhz_ : mem_max_mhz_) =
        p.max > 0 ? std::optional<double>(p.max) : std::nullopt;
  }
  for (void* h : all_handles(fn_.zesDeviceEnumTemperatureSensors, device_)) {
    zes_temp_properties_t p{};
    p.stype = kStypeTempProperties;
    if (fn_.zesTemperatureGetProperties(h, &p) != kSuccess) continue;
    if (p.type == kTempSensorsGpu || (p.type == kTempSensorsGlobal && !gpu_temp_)) {
      if (!gpu_temp_ || !p.onSubdevice) gpu_temp_ = h;
      if (p.maxTemperature > 0) temp_max_c_ = p.maxTemperature;
    }
    if (p.type == kTempSensorsMemory && (!mem_temp_ || !p.onSubdevice)) mem_temp_ = h;
  }
  for (void* h : all_handles(fn_.zesDeviceEnumMemoryModules, device_))
    memories_.push_back(h);
  for (void* h : all_handles(fn_.zesDeviceEnumEngineGroups, device_)) {
    zes_engine_properties_t p{};
    p.stype = kStypeEngineProperties;
    if (fn_.zesEngineGetProperties(h, &p) != kSuccess || p.onSubdevice) continue;
    if (p.type == kEngineGroupAll || (p.type == kEngineGroupComputeAll && !engine_)) engine_ = h;
  }
  for (void* h : all_handles(fn_.zesDeviceEnumRasErrorSets, device_)) {
    zes_ras_properties_t p{};
    p.stype = kStypeRasProperties;
    if (fn_.zesRasGetProperties(h, &p) != kSuccess) continue;
    (p.type == kRasCorrectable ? correctable_ : uncorrectable_).push_back(h);
  }
  zes_pci_properties_t pci{};
  pci.stype = kStypePciProperties;
  if (fn_.zesDevicePciGetProperties != nullptr &&
      fn_.zesDevicePciGetProperties(device_, &pci) == kSuccess) {
    pcie_ = fn_.zesDevicePciGetState != nullptr;
    if (pci.maxSpeed.gen > 0) pcie_max_gen_ = pci.maxSpeed.gen;
    if (pci.maxSpeed.width > 0) pcie_max_width_ = pci.maxSpeed.width;
  }
}

health_reading health_reader::read() {
  if (!enumerated_) enumerate();
  health_reading h;
  read_frequency(h);
  read_temperature(h);
  read_memory(h);
  read_activity(h);
  read_ras(h);
  read_pcie(h);
  return h;
}

void health_reader::read_frequency(health_reading& h) {
  auto state = [&](std::optional<zes_freq_handle_t> f) -> std::optional<zes_freq_state_t> {
    zes_freq_state_t s{};
    s.stype = kStypeFreqState;
    if (!f || fn_.zesFrequencyGetState(*f, &s) != kSuccess) return std::nullopt;
    return s;
  };
  if (const auto g = state(gpu_freq_)) {
    freq_ok_ = true;
    if (g->actual >= 0) h.sm_clock_mhz = static_cast<unsigned>(g->actual + 0.5);
    if (gpu_max_mhz_) h.max_sm_clock_mhz = static_cast<unsigned>(*gpu_max_mhz_ + 0.5);
    h.throttle = decode_throttle_reasons(g->throttleReasons);
  } else if (!freq_ok_) {
    gpu_freq_.reset();  // never answered: off for good
  }
  if (const auto m = state(mem_freq_)) {
    if (m->actual >= 0) h.memory_clock_mhz = static_cast<unsigned>(m->actual + 0.5);
    if (mem_max_mhz_) h.max_memory_clock_mhz = static_cast<unsigned>(*mem_max_mhz_ + 0.5);
  } else if (!h.memory_clock_mhz && !freq_ok_) {
    mem_freq_.reset();
  }
}

void health_reader::read_temperature(health_reading& h) {
  double c = 0;
  if (gpu_temp_ && fn_.zesTemperatureGetState(*gpu_temp_, &c) == kSuccess) {
    temp_ok_ = true;
    h.temperature_c = c;
    h.shutdown_temperature_c = temp_max_c_;
  } else if (!temp_ok_) {
    gpu_temp_.reset();
  }
  if (mem_temp_ && fn_.zesTemperatureGetState(*mem_temp_, &c) == kSuccess) {
    h.memory_temperature_c = c;
  }
}

void health_reader::read_memory(health_reading& h) {
  std::uint64_t size = 0;
  std::uint64_t free = 0;
  bool any = false;
  for (void* m : memories_) {
    zes_mem_state_t s{};
    s.stype = kStypeMemState;
    if (fn_.zesMemoryGetState(m, &s) != kSuccess) continue;
    size += s.size;
    free += s.free;
    any = true;
  }
  if (!any) {
    if (!mem_ok_) memories_.clear();
    return;
  }
  mem_ok_ = true;
  h.memory_total_bytes = size;
  h.memory_used_bytes = size >= free ? size - free : 0;
}

void health_reader::read_activity(health_reading& h) {
  zes_engine_stats_t s{};
  if (!engine_ || fn_.zesEngineGetActivity(*engine_, &s) != kSuccess) {
    if (!activity_ok_) engine_.reset();
    return;
  }
  activity_ok_ = true;
  // Utilisation is the active share of the time between two reads: none at the first.
  if (last_activity_ && s.timestamp > last_activity_->timestamp &&
      s.activeTime >= last_activity_->activeTime) {
    const double share = static_cast<double>(s.activeTime - last_activity_->activeTime) /
                         static_cast<double>(s.timestamp - last_activity_->timestamp);
    h.gpu_util_percent = static_cast<unsigned>(std::min(100.0, share * 100.0 + 0.5));
  }
  last_activity_ = s;
}

void health_reader::read_ras(health_reading& h) {
  auto total = [&](const std::vector<zes_ras_handle_t>& sets) -> std::optional<std::uint64_t> {
    std::optional<std::uint64_t> sum;
    for (void* r : sets) {
      zes_ras_state_t s{};
      s.stype = kStypeRasState;
      if (fn_.zesRasGetState(r, 0, &s) != kSuccess) continue;
      std::uint64_t n = 0;
      for (std::uint64_t c : s.category)
        n += c;
      sum = sum.value_or(0) + n;
    }
    return sum;
  };
  // Counted since the driver loaded (clear = false leaves them): NVML's "volatile".
  h.ecc_corrected_volatile = total(correctable_);
  h.ecc_uncorrected_volatile = total(uncorrectable_);
  if (h.ecc_corrected_volatile || h.ecc_uncorrected_volatile) ras_ok_ = true;
}

void health_reader::read_pcie(health_reading& h) {
  if (!pcie_) return;
  zes_pci_state_t s{};
  s.stype = kStypePciState;
  if (fn_.zesDevicePciGetState(device_, &s) != kSuccess) {
    if (!pcie_ok_) pcie_ = false;
    return;
  }
  pcie_ok_ = true;
  if (s.speed.gen > 0) h.pcie_generation = static_cast<unsigned>(s.speed.gen);
  if (s.speed.width > 0) h.pcie_width = static_cast<unsigned>(s.speed.width);
  if (pcie_max_gen_) h.pcie_max_generation = static_cast<unsigned>(*pcie_max_gen_);
  if (pcie_max_width_) h.pcie_max_width = static_cast<unsigned>(*pcie_max_width_);
}

std::vector<std::string> health_reader::supported() const {
  std::vector<std::string> out;
  if (activity_ok_) out.emplace_back("utilization");
  if (mem_ok_) out.emplace_back("memory");
  if (temp_ok_) out.emplace_back("temperature");
  if (freq_ok_) out.emplace_back("clocks");
  if (freq_ok_) out.emplace_back("clock_events");
  if (ras_ok_) out.emplace_back("ecc_errors");
  if (pcie_ok_) out.emplace_back("pcie_link");
  return out;
}

}  // namespace joules::ze
