// The AMD SMI entry points of the fake libamd_smi.so (README.md).  Structs whose layout changed
// between AMD SMI versions are written in the layout of the scenario's library_version.

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "amd_exports.hpp"
#include "amd_runtime.hpp"

namespace joules::amd {
namespace {

using fake_amdsmi::call;
using fake_gpu::reading_kind;

constexpr amdsmi_status_t kNotInit = 32;

const fake_amdsmi::version& lib() {
  return fake_amdsmi::current()->library;
}

template <class T>
void put(void* buf, std::size_t offset, T v) {
  std::memcpy(static_cast<char*>(buf) + offset, &v, sizeof v);
}

void put_string(void* buf, std::size_t offset, std::size_t size, const std::string& s) {
  const std::size_t n = std::min(s.size(), size - 1);
  std::memcpy(static_cast<char*>(buf) + offset, s.data(), n);
  static_cast<char*>(buf)[offset + n] = '\0';
}

// The prologue's answer as a status, or success to go on.
amdsmi_status_t status_of(const call& c) {
  switch (c.status()) {
    case call::state::uninitialised:
      return kNotInit;
    case call::state::invalid:
      return kAmdsmiInval;
    case call::state::lost:
      return kAmdsmiNotFound;
    case call::state::ok:
      break;
  }
  return kAmdsmiSuccess;
}

}  // namespace

extern "C" {

amdsmi_status_t amdsmi_init(std::uint64_t init_flags) {
  (void)init_flags;
  const long long rc = fake_amdsmi::init();
  if (rc < 0) return kAmdsmiDriverNotLoaded;  // the scenario could not be read (explained)
  return static_cast<amdsmi_status_t>(rc);
}

amdsmi_status_t amdsmi_shut_down(void) {
  fake_amdsmi::shutdown();
  return kAmdsmiSuccess;
}

amdsmi_status_t amdsmi_status_code_to_string(amdsmi_status_t status, const char** status_string) {
  if (status_string == nullptr) return kAmdsmiInval;
  switch (status) {
    case kAmdsmiSuccess:
      *status_string = "AMDSMI_STATUS_SUCCESS";
      break;
    case kAmdsmiNotSupported:
      *status_string = "AMDSMI_STATUS_NOT_SUPPORTED";
      break;
    case kAmdsmiNotFound:
      *status_string = "AMDSMI_STATUS_NOT_FOUND";
      break;
    case kAmdsmiDriverNotLoaded:
      *status_string = "AMDSMI_STATUS_DRIVER_NOT_LOADED";
      break;
    case kAmdsmiNoPerm:
      *status_string = "AMDSMI_STATUS_NO_PERM";
      break;
    default:
      *status_string = "AMDSMI_STATUS_UNKNOWN_ERROR";
  }
  return kAmdsmiSuccess;
}

amdsmi_status_t amdsmi_get_lib_version(void* version) {
  if (fake_amdsmi::current() == nullptr) return kNotInit;
  if (version == nullptr) return kAmdsmiInval;
  const auto& v = lib();
  // Up to 24.x {year, major, minor, release, build}; from 25 {major, minor, release, build}:
  // three numbers first either way, the build string at 16.
  put<std::uint32_t>(version, 0, v.major);
  put<std::uint32_t>(version, 4, v.minor);
  put<std::uint32_t>(version, 8, v.release);
  put<std::uint32_t>(version, 12, 0);
  put<const char*>(version, 16, "fake");
  return kAmdsmiSuccess;
}

amdsmi_status_t amdsmi_get_socket_handles(std::uint32_t* socket_count,
                                          amdsmi_socket_handle* socket_handles) {
  const auto* s = fake_amdsmi::current();
  if (s == nullptr) return kNotInit;
  if (socket_count == nullptr) return kAmdsmiInval;
  // One socket per GPU: its partitions are the socket's processors.
  const auto n = static_cast<std::uint32_t>(s->gpus.size());
  if (socket_handles != nullptr) {
    for (std::uint32_t i = 0; i < std::min(n, *socket_count); ++i)
      socket_handles[i] = const_cast<fake_amdsmi::gpu*>(&s->gpus[i]);
  }
  *socket_count = socket_handles != nullptr ? std::min(n, *socket_count) : n;
  return kAmdsmiSuccess;
}

amdsmi_status_t amdsmi_get_processor_handles(amdsmi_socket_handle socket_handle,
                                             std::uint32_t* processor_count,
                                             amdsmi_processor_handle* processor_handles) {
  const auto* s = fake_amdsmi::current();
  if (s == nullptr) return kNotInit;
  if (processor_count == nullptr) return kAmdsmiInval;
  std::vector<amdsmi_processor_handle> mine;
  for (const auto& p : s->processors) {
    if (p.owner == socket_handle) mine.push_back(s->handle(p));
  }
  if (mine.empty()) return kAmdsmiInval;
  const auto n = static_cast<std::uint32_t>(mine.size());
  if (processor_handles != nullptr) {
    for (std::uint32_t i = 0; i < std::min(n, *processor_count); ++i)
      processor_handles[i] = mine[i];
  }
  *processor_count = processor_handles != nullptr ? std::min(n, *processor_count) : n;
  return kAmdsmiSuccess;
}

amdsmi_status_t amdsmi_get_processor_type(amdsmi_processor_handle processor_handle,
                                          processor_type_t* processor_type) {
  const call c(processor_handle);
  if (c.status() == call::state::uninitialised || c.status() == call::state::invalid)
    return status_of(c);
  *processor_type = kProcessorAmdGpu;
  return kAmdsmiSuccess;
}

amdsmi_status_t amdsmi_get_gpu_device_uuid(amdsmi_processor_handle processor_handle,
                                           unsigned int* uuid_length, char* uuid) {
  const call c(processor_handle);
  if (const auto rc = status_of(c); rc != kAmdsmiSuccess) return rc;
  if (uuid_length == nullptr || uuid == nullptr || *uuid_length < kAmdsmiUuidSize)
    return kAmdsmiInval;
  // The UUID comes from the ASIC's serial: every partition of a GPU has its GPU's.
  put_string(uuid, 0, *uuid_length, c.owner().uuid);
  return kAmdsmiSuccess;
}

amdsmi_status_t amdsmi_get_gpu_device_bdf(amdsmi_processor_handle processor_handle,
                                          amdsmi_bdf_t* bdf) {
  const call c(processor_handle);
  if (const auto rc = status_of(c); rc != kAmdsmiSuccess) return rc;
  const auto& g = c.owner();
  // A partition is numbered in the function: it has no PCI function of its own.
  *bdf = (static_cast<std::uint64_t>(g.domain) << 16) | (g.bus << 8) | (g.device << 3) |
         c.proc().partition;
  return kAmdsmiSuccess;
}

amdsmi_status_t amdsmi_get_gpu_asic_info(amdsmi_processor_handle processor_handle, void* info) {
  const call c(processor_handle);
  if (const auto rc = status_of(c); rc != kAmdsmiSuccess) return rc;
  const unsigned n = lib().number();
  // market_name is 64 bytes up to 24.5 and 256 from 24.6; asic_serial moves with what precedes
  // it (docs/amd-notes.md §3).
  put_string(info, 0, n < 2406 ? 64 : 256, c.owner().name);
  std::size_t serial = 0;
  if (n < 2304) {
    serial = 84;
  } else if (n < 2406) {
    serial = 148;
  } else if (n < 2500) {
    serial = 340;
  } else if (n >= 2601) {
    serial = 532;
  }
  char hex[24];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(c.owner().unique_id));
  if (serial != 0) put_string(info, serial, 32, hex);
  return kAmdsmiSuccess;
}

amdsmi_status_t amdsmi_get_gpu_driver_info(amdsmi_processor_handle processor_handle, void* info) {
  const call c(processor_handle);
  if (const auto rc = status_of(c); rc != kAmdsmiSuccess) return rc;
  put_string(info, 0, 64, fake_amdsmi::current()->driver_version);
  return kAmdsmiSuccess;
}

amdsmi_status_t amdsmi_get_gpu_kfd_info(amdsmi_processor_handle processor_handle,
                                        amdsmi_kfd_info_t* info) {
  const call c(processor_handle);
  if (const auto rc = status_of(c); rc != kAmdsmiSuccess) return rc;
  *info = amdsmi_kfd_info_t{};
  info->kfd_id = 1000 + c.owner().index;
  info->node_id = c.owner().index;
  info->current_partition_id = c.proc().partition;
  return kAmdsmiSuccess;
}

amdsmi_status_t amdsmi_get_energy_count(amdsmi_processor_handle processor_handle,
                                        std::uint64_t* energy_accumulator,
                                        float* counter_resolution, std::uint64_t* timestamp) {
  const call c(processor_handle);
  if (const auto rc = status_of(c); rc != kAmdsmiSuccess) return rc;
  if (energy_accumulator == nullptr || timestamp == nullptr) return kAmdsmiInval;
  // The socket's energy: the primary partition's only.
  if (!c.owner().counter.supported || !c.primary()) return kAmdsmiNotSupported;
  if (const auto f = c.fault(reading_kind::energy); f != 0) return static_cast<amdsmi_status_t>(f);
  *energy_accumulator = c.owner().counts(c.t());
  if (counter_resolution != nullptr) *counter_resolution = c.owner().counter.resolution_uj;
  *timestamp = static_cast<std::uint64_t>(std::max(0.0, c.t()) * 1e9);
  return kAmdsmiSuccess;
}

amdsmi_status_t amdsmi_get_power_info(amdsmi_processor_handle processor_handle, void* info) {
  const call c(processor_handle);
  if (const auto rc = status_of(c); rc != kAmdsmiSuccess) return rc;
  if (!c.primary()) return kAmdsmiNotSupported;
  if (const auto f = c.fault(reading_kind::power); f != 0) return static_cast<amdsmi_status_t>(f);
  const auto& g = c.owner();
  const unsigned n = lib().number();
  const std::uint32_t w = g.watts(c.t());
  // Unsupported fields: 0 up to 24.x, UINT32_MAX from 25 (its header says so).
  const std::uint32_t none = n < 2500 ? 0U : 0xFFFFFFFFU;
  const std::uint32_t current = g.socket_power.current ? w : none;
  const std::uint32_t average = g.socket_power.average ? w : none;
  if (n < 2304) {
    put<std::uint32_t>(info, 0, average);  // ROCm 5.7: no current_socket_power
  } else if (n < 2500) {
    put<std::uint32_t>(info, 0, current);
    put<std::uint32_t>(info, 4, average);
  } else {
    put<std::uint64_t>(info, 0, w);  // socket_power
    put<std::uint32_t>(info, 8, current);
    put<std::uint32_t>(info, 12, average);
  }
  return kAmdsmiSuccess;
}

amdsmi_status_t amdsmi_get_power_cap_info(amdsmi_processor_handle processor_handle,
                                          std::uint32_t sensor_ind, amdsmi_power_cap_info_t* info) {
  const call c(processor_handle);
  if (const auto rc = status_of(c); rc != kAmdsmiSuccess) return rc;
  if (sensor_ind != 0) return kAmdsmiInval;
  const auto& g = c.owner();
  if (!g.limits_supported) return kAmdsmiNotSupported;
  *info = amdsmi_power_cap_info_t{};
  info->power_cap = std::uint64_t{g.power->limit_mw()} * 1000U;  // µW
  info->default_power_cap = std::uint64_t{g.default_limit_mw} * 1000U;
  info->min_power_cap = std::uint64_t{g.min_limit_mw} * 1000U;
  info->max_power_cap = std::uint64_t{g.max_limit_mw} * 1000U;
  return kAmdsmiSuccess;
}

amdsmi_status_t amdsmi_set_power_cap(amdsmi_processor_handle processor_handle,
                                     std::uint32_t sensor_ind, std::uint64_t cap) {
  const call c(processor_handle);
  if (const auto rc = status_of(c); rc != kAmdsmiSuccess) return rc;
  if (sensor_ind != 0) return kAmdsmiInval;
  const auto& g = c.owner();
  if (!g.limits_supported) return kAmdsmiNotSupported;
  if (!g.limit_settable) return kAmdsmiNoPerm;
  // µW, within the range the driver reports (whole milliwatts, as joules sets them).
  if (cap < std::uint64_t{g.min_limit_mw} * 1000U || cap > std::uint64_t{g.max_limit_mw} * 1000U)
    return kAmdsmiInval;
  if (!g.power->set_limit(c.t(), static_cast<unsigned>(cap / 1000U))) return kAmdsmiUnknownError;
  fake_amdsmi::limits_changed();
  return kAmdsmiSuccess;
}

amdsmi_status_t amdsmi_get_gpu_activity(amdsmi_processor_handle processor_handle,
                                        amdsmi_engine_usage_t* info) {
  const call c(processor_handle);
  if (const auto rc = status_of(c); rc != kAmdsmiSuccess) return rc;
  *info = amdsmi_engine_usage_t{};
  info->gfx_activity = c.owner().state.gfx_activity;
  info->umc_activity = c.owner().state.umc_activity;
  return kAmdsmiSuccess;
}

amdsmi_status_t amdsmi_get_gpu_vram_usage(amdsmi_processor_handle processor_handle,
                                          amdsmi_vram_usage_t* info) {
  const call c(processor_handle);
  if (const auto rc = status_of(c); rc != kAmdsmiSuccess) return rc;
  *info = amdsmi_vram_usage_t{};
  info->vram_total = c.owner().state.vram_total_mb;
  info->vram_used = c.owner().state.vram_used_mb;
  return kAmdsmiSuccess;
}

amdsmi_status_t amdsmi_get_temp_metric(amdsmi_processor_handle processor_handle,
                                       amdsmi_temperature_type_t sensor_type,
                                       amdsmi_temperature_metric_t metric,
                                       std::int64_t* temperature) {
  const call c(processor_handle);
  if (const auto rc = status_of(c); rc != kAmdsmiSuccess) return rc;
  const auto& h = c.owner().state;
  // An MI300 has no edge sensor.
  if (sensor_type == kTempHotspot && metric == kTempCurrent) {
    *temperature = h.hotspot_c;
  } else if (sensor_type == kTempHotspot && metric == kTempCritical) {
    *temperature = h.critical_c;
  } else if (sensor_type == kTempHotspot && metric == kTempEmergency) {
    *temperature = h.emergency_c;
  } else if (sensor_type == kTempVram && metric == kTempCurrent) {
    *temperature = h.vram_c;
  } else {
    return kAmdsmiNotSupported;
  }
  return kAmdsmiSuccess;
}

amdsmi_status_t amdsmi_get_clock_info(amdsmi_processor_handle processor_handle,
                                      amdsmi_clk_type_t clk_type, void* info) {
  const call c(processor_handle);
  if (const auto rc = status_of(c); rc != kAmdsmiSuccess) return rc;
  const auto& h = c.owner().state;
  if (clk_type != kClkGfx && clk_type != kClkMem) return kAmdsmiNotSupported;
  const bool gfx = clk_type == kClkGfx;
  put<std::uint32_t>(info, 0, gfx ? h.gfx_mhz : h.mem_mhz);
  put<std::uint32_t>(info, 4, 0);
  put<std::uint32_t>(info, 8, gfx ? h.gfx_max_mhz : h.mem_max_mhz);
  return kAmdsmiSuccess;
}

amdsmi_status_t amdsmi_get_gpu_total_ecc_count(amdsmi_processor_handle processor_handle, void* ec) {
  const call c(processor_handle);
  if (const auto rc = status_of(c); rc != kAmdsmiSuccess) return rc;
  put<std::uint64_t>(ec, 0, c.owner().state.ecc_correctable);
  put<std::uint64_t>(ec, 8, c.owner().state.ecc_uncorrectable);
  return kAmdsmiSuccess;
}

amdsmi_status_t amdsmi_get_gpu_ecc_enabled(amdsmi_processor_handle processor_handle,
                                           std::uint64_t* enabled_blocks) {
  const call c(processor_handle);
  if (const auto rc = status_of(c); rc != kAmdsmiSuccess) return rc;
  *enabled_blocks = 0x3FFF;  // every RAS block
  return kAmdsmiSuccess;
}

amdsmi_status_t amdsmi_get_pcie_info(amdsmi_processor_handle processor_handle, void* info) {
  const call c(processor_handle);
  if (const auto rc = status_of(c); rc != kAmdsmiSuccess) return rc;
  const auto& h = c.owner().state;
  put<std::uint16_t>(info, 0, static_cast<std::uint16_t>(h.pcie_max_width));
  put<std::uint32_t>(info, 4, h.pcie_max_speed_mt);
  put<std::uint16_t>(info, 96, static_cast<std::uint16_t>(h.pcie_width));
  put<std::uint32_t>(info, 100, h.pcie_speed_mt);
  put<std::uint64_t>(info, 112, 0);  // replays
  return kAmdsmiSuccess;
}

amdsmi_status_t amdsmi_get_violation_status(amdsmi_processor_handle processor_handle, void* info) {
  const call c(processor_handle);
  if (const auto rc = status_of(c); rc != kAmdsmiSuccess) return rc;
  const auto& v = lib();
  std::size_t active = 0;  // the offset of active_prochot_thrm
  if (v.major == 24 && v.minor >= 7) active = 104;
  if (v.number() >= 2601) active = 120;
  if (active == 0) return kAmdsmiNotSupported;
  for (std::size_t k = 0; k < 5; ++k)
    put<std::uint8_t>(info, active + k, 0);
  put<std::uint8_t>(info, active + 1, c.owner().state.power_capped ? 1 : 0);  // active_ppt_pwr
  return kAmdsmiSuccess;
}

}  // extern "C"
}  // namespace joules::amd
