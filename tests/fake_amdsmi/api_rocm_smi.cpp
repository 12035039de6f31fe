// The ROCm SMI entry points of the fake librocm_smi64.so (README.md): the same GPUs as the fake
// AMD SMI, numbered by processor (partitions included), in ROCm SMI's units (µW, bytes,
// millidegrees).

#include <algorithm>
#include <cmath>
#include <cstring>

#include "amd_exports.hpp"
#include "amd_runtime.hpp"

namespace joules::amd {
namespace {

using fake_amdsmi::call;
using fake_gpu::reading_kind;

constexpr rsmi_status_t kRsmiUnknown = 0xFFFFFFFFU;

rsmi_status_t rsmi_status_of(const call& c) {
  switch (c.status()) {
    case call::state::uninitialised:
      return kRsmiInitError;
    case call::state::invalid:
      return kRsmiInvalidArgs;
    case call::state::lost:
      return kRsmiNotFound;
    case call::state::ok:
      break;
  }
  return kRsmiSuccess;
}

// A scripted fault's AMD SMI status in ROCm SMI's terms.
rsmi_status_t from_fault(long long amdsmi_status) {
  if (amdsmi_status == kAmdsmiNotSupported) return kRsmiNotSupported;
  if (amdsmi_status == 30) return 16;  // BUSY
  return kRsmiUnknown;
}

std::uint64_t microwatts(const fake_amdsmi::gpu& g, double t) {
  // hwmon's power in µW: the same reading as AMD SMI's, before its rounding to watts.
  const auto& p = g.socket_power;
  const double tau = p.update_s > 0.0 ? p.update_s * std::floor(t / p.update_s) : t;
  const double w = p.window_s > 0.0
                       ? (g.power->energy_j(tau) - g.power->energy_j(tau - p.window_s)) / p.window_s
                       : g.power->watts_at(tau);
  return static_cast<std::uint64_t>(std::max(0LL, std::llround(w * 1e6)));
}

}  // namespace

extern "C" {

rsmi_status_t rsmi_init(std::uint64_t init_flags) {
  (void)init_flags;
  const long long rc = fake_amdsmi::init();
  if (rc == 0) return kRsmiSuccess;
  return rc == kAmdsmiNoPerm ? kRsmiPermission : kRsmiInitError;
}

rsmi_status_t rsmi_shut_down(void) {
  fake_amdsmi::shutdown();
  return kRsmiSuccess;
}

rsmi_status_t rsmi_status_string(rsmi_status_t status, const char** status_string) {
  if (status_string == nullptr) return kRsmiInvalidArgs;
  switch (status) {
    case kRsmiSuccess:
      *status_string = "RSMI_STATUS_SUCCESS";
      break;
    case kRsmiNotSupported:
      *status_string = "RSMI_STATUS_NOT_SUPPORTED";
      break;
    case kRsmiNotFound:
      *status_string = "RSMI_STATUS_NOT_FOUND";
      break;
    case kRsmiInitError:
      *status_string = "RSMI_STATUS_INIT_ERROR";
      break;
    case kRsmiInvalidArgs:
      *status_string = "RSMI_STATUS_INVALID_ARGS";
      break;
    case kRsmiPermission:
      *status_string = "RSMI_STATUS_PERMISSION";
      break;
    default:
      *status_string = "RSMI_STATUS_UNKNOWN_ERROR";
  }
  return kRsmiSuccess;
}

rsmi_status_t rsmi_version_get(rsmi_version_t* version) {
  const auto* s = fake_amdsmi::current();
  if (s == nullptr) return kRsmiInitError;
  *version = rsmi_version_t{s->rocm_smi.major, s->rocm_smi.minor, s->rocm_smi.release, "fake"};
  return kRsmiSuccess;
}

rsmi_status_t rsmi_num_monitor_devices(std::uint32_t* num_devices) {
  const auto* s = fake_amdsmi::current();
  if (s == nullptr) return kRsmiInitError;
  *num_devices = static_cast<std::uint32_t>(s->processors.size());
  return kRsmiSuccess;
}

rsmi_status_t rsmi_dev_pci_id_get(std::uint32_t dv_ind, std::uint64_t* bdfid) {
  const call c(dv_ind);
  if (const auto rc = rsmi_status_of(c); rc != kRsmiSuccess) return rc;
  const auto& g = c.owner();
  // The documented BDFID: the partition in bits 28-31.
  *bdfid = (static_cast<std::uint64_t>(g.domain) << 32) |
           (static_cast<std::uint64_t>(c.proc().partition) << 28) | (g.bus << 8) | (g.device << 3);
  return kRsmiSuccess;
}

rsmi_status_t rsmi_dev_unique_id_get(std::uint32_t dv_ind, std::uint64_t* id) {
  const call c(dv_ind);
  if (const auto rc = rsmi_status_of(c); rc != kRsmiSuccess) return rc;
  *id = c.owner().unique_id;
  return kRsmiSuccess;
}

rsmi_status_t rsmi_dev_name_get(std::uint32_t dv_ind, char* name, std::size_t len) {
  const call c(dv_ind);
  if (const auto rc = rsmi_status_of(c); rc != kRsmiSuccess) return rc;
  if (name == nullptr || len == 0) return kRsmiInvalidArgs;
  const std::string& n = c.owner().name;
  const std::size_t k = std::min(n.size(), len - 1);
  std::memcpy(name, n.data(), k);
  name[k] = '\0';
  return kRsmiSuccess;
}

rsmi_status_t rsmi_dev_partition_id_get(std::uint32_t dv_ind, std::uint32_t* partition_id) {
  const call c(dv_ind);
  if (const auto rc = rsmi_status_of(c); rc != kRsmiSuccess) return rc;
  *partition_id = c.proc().partition;
  return kRsmiSuccess;
}

rsmi_status_t rsmi_dev_energy_count_get(std::uint32_t dv_ind, std::uint64_t* power,
                                        float* counter_resolution, std::uint64_t* timestamp) {
  const call c(dv_ind);
  if (const auto rc = rsmi_status_of(c); rc != kRsmiSuccess) return rc;
  if (power == nullptr || timestamp == nullptr) return kRsmiInvalidArgs;
  if (!c.owner().counter.supported || !c.primary()) return kRsmiNotSupported;
  if (const auto f = c.fault(reading_kind::energy); f != 0) return from_fault(f);
  *power = c.owner().counts(c.t());
  if (counter_resolution != nullptr) *counter_resolution = c.owner().counter.resolution_uj;
  *timestamp = static_cast<std::uint64_t>(std::max(0.0, c.t()) * 1e9);
  return kRsmiSuccess;
}

rsmi_status_t rsmi_dev_power_get(std::uint32_t dv_ind, std::uint64_t* power,
                                 rsmi_power_type_t* type) {
  const call c(dv_ind);
  if (const auto rc = rsmi_status_of(c); rc != kRsmiSuccess) return rc;
  if (!c.primary()) return kRsmiNotSupported;
  if (const auto f = c.fault(reading_kind::power); f != 0) return from_fault(f);
  const auto& g = c.owner();
  if (!g.socket_power.current && !g.socket_power.average) return kRsmiNotSupported;
  *power = microwatts(g, c.t());
  *type = g.socket_power.current ? kRsmiCurrentPower : kRsmiAveragePower;
  return kRsmiSuccess;
}

rsmi_status_t rsmi_dev_power_ave_get(std::uint32_t dv_ind, std::uint32_t sensor_ind,
                                     std::uint64_t* power) {
  const call c(dv_ind);
  if (const auto rc = rsmi_status_of(c); rc != kRsmiSuccess) return rc;
  if (sensor_ind != 0 || !c.primary() || !c.owner().socket_power.average) return kRsmiNotSupported;
  if (const auto f = c.fault(reading_kind::power); f != 0) return from_fault(f);
  *power = microwatts(c.owner(), c.t());
  return kRsmiSuccess;
}

rsmi_status_t rsmi_dev_power_cap_get(std::uint32_t dv_ind, std::uint32_t sensor_ind,
                                     std::uint64_t* cap) {
  const call c(dv_ind);
  if (const auto rc = rsmi_status_of(c); rc != kRsmiSuccess) return rc;
  if (sensor_ind != 0) return kRsmiInvalidArgs;
  if (!c.owner().limits_supported) return kRsmiNotSupported;
  *cap = std::uint64_t{c.owner().power->limit_mw()} * 1000U;
  return kRsmiSuccess;
}

rsmi_status_t rsmi_dev_power_cap_default_get(std::uint32_t dv_ind, std::uint64_t* default_cap) {
  const call c(dv_ind);
  if (const auto rc = rsmi_status_of(c); rc != kRsmiSuccess) return rc;
  *default_cap = std::uint64_t{c.owner().default_limit_mw} * 1000U;
  return kRsmiSuccess;
}

rsmi_status_t rsmi_dev_power_cap_range_get(std::uint32_t dv_ind, std::uint32_t sensor_ind,
                                           std::uint64_t* max, std::uint64_t* min) {
  const call c(dv_ind);
  if (const auto rc = rsmi_status_of(c); rc != kRsmiSuccess) return rc;
  if (sensor_ind != 0) return kRsmiInvalidArgs;
  if (!c.owner().limits_supported) return kRsmiNotSupported;
  *max = std::uint64_t{c.owner().max_limit_mw} * 1000U;
  *min = std::uint64_t{c.owner().min_limit_mw} * 1000U;
  return kRsmiSuccess;
}

rsmi_status_t rsmi_dev_power_cap_set(std::uint32_t dv_ind, std::uint32_t sensor_ind,
                                     std::uint64_t cap) {
  const call c(dv_ind);
  if (const auto rc = rsmi_status_of(c); rc != kRsmiSuccess) return rc;
  if (sensor_ind != 0) return kRsmiInvalidArgs;
  const auto& g = c.owner();
  if (!g.limits_supported) return kRsmiNotSupported;
  if (!g.limit_settable) return kRsmiPermission;
  if (cap < std::uint64_t{g.min_limit_mw} * 1000U || cap > std::uint64_t{g.max_limit_mw} * 1000U)
    return kRsmiInvalidArgs;
  if (!g.power->set_limit(c.t(), static_cast<unsigned>(cap / 1000U))) return kRsmiUnknown;
  fake_amdsmi::limits_changed();
  return kRsmiSuccess;
}

rsmi_status_t rsmi_dev_busy_percent_get(std::uint32_t dv_ind, std::uint32_t* busy_percent) {
  const call c(dv_ind);
  if (const auto rc = rsmi_status_of(c); rc != kRsmiSuccess) return rc;
  *busy_percent = c.owner().state.gfx_activity;
  return kRsmiSuccess;
}

rsmi_status_t rsmi_dev_memory_total_get(std::uint32_t dv_ind, std::uint32_t mem_type,
                                        std::uint64_t* total) {
  const call c(dv_ind);
  if (const auto rc = rsmi_status_of(c); rc != kRsmiSuccess) return rc;
  if (mem_type != kRsmiMemTypeVram) return kRsmiNotSupported;
  *total = std::uint64_t{c.owner().state.vram_total_mb} * 1048576U;
  return kRsmiSuccess;
}

rsmi_status_t rsmi_dev_memory_usage_get(std::uint32_t dv_ind, std::uint32_t mem_type,
                                        std::uint64_t* used) {
  const call c(dv_ind);
  if (const auto rc = rsmi_status_of(c); rc != kRsmiSuccess) return rc;
  if (mem_type != kRsmiMemTypeVram) return kRsmiNotSupported;
  *used = std::uint64_t{c.owner().state.vram_used_mb} * 1048576U;
  return kRsmiSuccess;
}

rsmi_status_t rsmi_dev_temp_metric_get(std::uint32_t dv_ind, std::uint32_t sensor_type,
                                       std::uint32_t metric, std::int64_t* temperature) {
  const call c(dv_ind);
  if (const auto rc = rsmi_status_of(c); rc != kRsmiSuccess) return rc;
  if (metric != kRsmiTempCurrent) return kRsmiNotSupported;
  const auto& h = c.owner().state;
  if (sensor_type == kRsmiTempJunction) {
    *temperature = h.hotspot_c * 1000;
  } else if (sensor_type == kRsmiTempMemory) {
    *temperature = h.vram_c * 1000;
  } else {
    return kRsmiNotSupported;
  }
  return kRsmiSuccess;
}

}  // extern "C"
}  // namespace joules::amd
