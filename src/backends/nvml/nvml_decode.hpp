#pragma once
// Pure decoding of what NVML hands back for health readings: process lists whose struct stride
// changed without a version bump (docs/nvml-notes.md §5.8), GPM metric results (§5.9), byte
// counters that wrap.  No dlopen, no driver: unit-tested with made-up buffers.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "backends/health.hpp"
#include "backends/nvml/nvml_abi.hpp"

namespace joules::nvml {

// The _v3 process calls wrote 24-byte entries (nvmlProcessInfo_v2_t) on most drivers and
// 32-byte ones (nvmlProcessDetail_v1_t) on early R535 drivers, with the same version number.
// Callers hand a buffer of `count` entries of up to 32 bytes each; this picks the stride under
// which every entry looks like a process (pid in 1..kMaxPid, plausible memory), preferring 24.
// With one entry both strides read the same bytes.
inline constexpr std::size_t kProcessStrideV2 = sizeof(nvmlProcessInfo_v2_t);
inline constexpr std::size_t kProcessStrideDetail = sizeof(nvmlProcessDetail_v1_t);
inline constexpr unsigned kMaxPid = 4194304;  // Linux PID_MAX_LIMIT (2^22)

std::size_t process_stride(std::span<const std::byte> buffer, unsigned count);

// Entries of `stride` bytes (16: v1, 24: v2, 32: detail); pid 0 entries are skipped.  Memory that
// NVML reports as NVML_VALUE_NOT_AVAILABLE (all ones, e.g. under WDDM) is left unknown.
std::vector<gpu_process> decode_processes(std::span<const std::byte> buffer, unsigned count,
                                          std::size_t stride, bool graphics);

// The GPM metrics joules asks for, in request order.
inline constexpr unsigned kGpmRequested[] = {kGpmMetricSmUtil,
                                             kGpmMetricSmOccupancy,
                                             kGpmMetricAnyTensorUtil,
                                             kGpmMetricDramBwUtil,
                                             kGpmMetricPcieTxPerSec,
                                             kGpmMetricPcieRxPerSec,
                                             kGpmMetricNvlinkTotalTxPerSec,
                                             kGpmMetricNvlinkTotalRxPerSec};

// Copies the metrics that succeeded into `out` (percentages as they are; MiB/s to bytes/s).
void apply_gpm(std::span<const nvmlGpmMetric_t> metrics, health_reading& out);

// A field value (nvmlDeviceGetFieldValues) as a number, whatever its valueType.
double field_as_double(const nvmlFieldValue_t& v);
std::uint64_t field_as_u64(const nvmlFieldValue_t& v);

// Bytes per second between two readings of a byte counter that may wrap at 2^64 (or at 2^32
// when both readings fit in 32 bits: older drivers' 32-bit counters).  nullopt when dt <= 0.
std::optional<double> counter_rate(std::uint64_t before, std::uint64_t after, double dt_s);

// Clock event reasons from nvmlDeviceGetCurrentClocksEventReasons' bitmask.
clock_events decode_clock_events(std::uint64_t bits);

}  // namespace joules::nvml
