#include "backends/nvml/nvml_decode.hpp"

#include <cstring>
#include <limits>

namespace joules::nvml {
namespace {

// pid and usedGpuMemory sit at the same offsets (0 and 8) in every process struct version.
struct process_head {
  unsigned pid = 0;
  std::uint64_t memory = 0;
};

process_head head_at(std::span<const std::byte> buffer, std::size_t offset) {
  process_head h;
  if (offset + 16 > buffer.size()) return h;
  std::memcpy(&h.pid, buffer.data() + offset, sizeof h.pid);
  std::memcpy(&h.memory, buffer.data() + offset + 8, sizeof h.memory);
  return h;
}

constexpr std::uint64_t kNotAvailable = std::numeric_limits<std::uint64_t>::max();
// More memory than any GPU has (1 PiB): the bytes are not a usedGpuMemory.
constexpr std::uint64_t kImplausibleMemory = 1ULL << 50U;

bool plausible(const process_head& h) {
  return h.pid != 0 && h.pid <= kMaxPid &&
         (h.memory == kNotAvailable || h.memory < kImplausibleMemory);
}

bool all_plausible(std::span<const std::byte> buffer, unsigned count, std::size_t stride) {
  if (static_cast<std::size_t>(count) * stride > buffer.size()) return false;
  for (unsigned i = 0; i < count; ++i) {
    if (!plausible(head_at(buffer, i * stride))) return false;
  }
  return true;
}

}  // namespace

std::size_t process_stride(std::span<const std::byte> buffer, unsigned count) {
  if (count <= 1 || all_plausible(buffer, count, kProcessStrideV2)) return kProcessStrideV2;
  if (all_plausible(buffer, count, kProcessStrideDetail)) return kProcessStrideDetail;
  return kProcessStrideV2;
}

std::vector<gpu_process> decode_processes(std::span<const std::byte> buffer, unsigned count,
                                          std::size_t stride, bool graphics) {
  std::vector<gpu_process> out;
  for (unsigned i = 0; i < count; ++i) {
    const std::size_t offset = i * stride;
    if (offset + 16 > buffer.size()) break;
    const process_head h = head_at(buffer, offset);
    if (h.pid == 0) continue;
    gpu_process p;
    p.pid = h.pid;
    if (h.memory != kNotAvailable) p.used_memory_bytes = h.memory;
    p.graphics = graphics;
    out.push_back(p);
  }
  return out;
}

void apply_gpm(std::span<const nvmlGpmMetric_t> metrics, health_reading& out) {
  constexpr double kMiB = 1024.0 * 1024.0;
  for (const nvmlGpmMetric_t& m : metrics) {
    if (m.nvmlReturn != kSuccess) continue;
    const double v = m.value;
    switch (m.metricId) {
      case kGpmMetricSmUtil:
        out.sm_activity_percent = v;
        break;
      case kGpmMetricSmOccupancy:
        out.sm_occupancy_percent = v;
        break;
      case kGpmMetricAnyTensorUtil:
        out.tensor_activity_percent = v;
        break;
      case kGpmMetricDramBwUtil:
        out.dram_bandwidth_percent = v;
        break;
      case kGpmMetricPcieTxPerSec:
        out.gpm_pcie_tx_bytes_per_s = v * kMiB;
        break;
      case kGpmMetricPcieRxPerSec:
        out.gpm_pcie_rx_bytes_per_s = v * kMiB;
        break;
      case kGpmMetricNvlinkTotalTxPerSec:
        out.nvlink_tx_bytes_per_s = v * kMiB;
        break;
      case kGpmMetricNvlinkTotalRxPerSec:
        out.nvlink_rx_bytes_per_s = v * kMiB;
        break;
      default:
        break;
    }
  }
}

double field_as_double(const nvmlFieldValue_t& v) {
  switch (v.valueType) {
    case kValueTypeDouble:
      return v.value.dVal;
    case kValueTypeUnsignedInt:
      return static_cast<double>(v.value.uiVal);
    case kValueTypeUnsignedLong:
      return static_cast<double>(v.value.ulVal);
    case kValueTypeUnsignedLongLong:
      return static_cast<double>(v.value.ullVal);
    case kValueTypeSignedLongLong:
      return static_cast<double>(v.value.sllVal);
    case kValueTypeSignedInt:
      return static_cast<double>(v.value.siVal);
    case kValueTypeUnsignedShort:
      return static_cast<double>(v.value.usVal);
    default:
      return 0.0;
  }
}

std::uint64_t field_as_u64(const nvmlFieldValue_t& v) {
  switch (v.valueType) {
    case kValueTypeUnsignedLongLong:
      return v.value.ullVal;
    case kValueTypeUnsignedLong:
      return v.value.ulVal;
    case kValueTypeUnsignedInt:
      return v.value.uiVal;
    case kValueTypeSignedLongLong:
      return v.value.sllVal < 0 ? 0 : static_cast<std::uint64_t>(v.value.sllVal);
    default: {
      const double d = field_as_double(v);
      return d > 0.0 ? static_cast<std::uint64_t>(d) : 0;
    }
  }
}

std::optional<double> counter_rate(std::uint64_t before, std::uint64_t after, double dt_s) {
  if (!(dt_s > 0.0)) return std::nullopt;
  std::uint64_t delta = after - before;  // modulo 2^64: right across a 64-bit wrap
  constexpr std::uint64_t k32 = 0xFFFFFFFFULL;
  if (after < before && before <= k32) delta = (k32 - before) + after + 1;  // a 32-bit counter
  return static_cast<double>(delta) / dt_s;
}

clock_events decode_clock_events(std::uint64_t bits) {
  clock_events e;
  e.raw = bits;
  e.gpu_idle = (bits & kClocksEventGpuIdle) != 0;
  e.applications_clocks = (bits & kClocksEventApplicationsClocksSetting) != 0;
  e.sw_power_cap = (bits & kClocksEventSwPowerCap) != 0;
  e.hw_slowdown = (bits & kClocksEventHwSlowdown) != 0;
  e.sync_boost = (bits & kClocksEventSyncBoost) != 0;
  e.sw_thermal = (bits & kClocksEventSwThermalSlowdown) != 0;
  e.hw_thermal = (bits & kClocksEventHwThermalSlowdown) != 0;
  e.hw_power_brake = (bits & kClocksEventHwPowerBrakeSlowdown) != 0;
  e.display_clock = (bits & kClocksEventDisplayClockSetting) != 0;
  return e;
}

}  // namespace joules::nvml
