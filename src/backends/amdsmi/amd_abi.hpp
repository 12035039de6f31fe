#pragma once
// The parts of AMD SMI's amdsmi.h and ROCm SMI's rocm_smi.h that joules uses, written from the
// public headers (docs/amd-notes.md §2 lists them with their versions).  joules links neither
// library: both are loaded with dlopen (amd_library.hpp), so only these declarations must agree
// with the library found at run time.
//
// AMD SMI changed the layout of some structs between its major versions without renaming them
// (docs/amd-notes.md §3): those are not declared as structs here.  joules hands the library an
// oversized zeroed buffer (kStructBuffer) and reads the fields at the offsets of the layout the
// library's version says (amd_decode.hpp).  Structs whose layout every version shares are
// declared, with static_asserts on their sizes.

#include <cstddef>
#include <cstdint>

namespace joules::amd {

// ---- AMD SMI (libamd_smi.so) --------------------------------------------------------------

// amdsmi_status_t is an enum with members 0xFFFFFFFE and 0xFFFFFFFF: an unsigned 32-bit value.
using amdsmi_status_t = std::uint32_t;
using amdsmi_processor_handle = void*;
using amdsmi_socket_handle = void*;
using processor_type_t = std::uint32_t;             // enum
using amdsmi_clk_type_t = std::uint32_t;            // enum
using amdsmi_temperature_type_t = std::uint32_t;    // enum
using amdsmi_temperature_metric_t = std::uint32_t;  // enum

inline constexpr amdsmi_status_t kAmdsmiSuccess = 0;
inline constexpr amdsmi_status_t kAmdsmiInval = 1;
inline constexpr amdsmi_status_t kAmdsmiNotSupported = 2;
inline constexpr amdsmi_status_t kAmdsmiNotYetImplemented = 3;
inline constexpr amdsmi_status_t kAmdsmiNoPerm = 10;
inline constexpr amdsmi_status_t kAmdsmiInitError = 18;
inline constexpr amdsmi_status_t kAmdsmiNotFound = 31;  // "Processor Not found"
inline constexpr amdsmi_status_t kAmdsmiDriverNotLoaded = 34;
inline constexpr amdsmi_status_t kAmdsmiNoData = 40;
inline constexpr amdsmi_status_t kAmdsmiUnknownError = 0xFFFFFFFFU;

inline constexpr std::uint64_t kAmdsmiInitAmdGpus = 1U << 1;  // AMDSMI_INIT_AMD_GPUS
inline constexpr processor_type_t kProcessorAmdGpu = 1;       // AMDSMI_PROCESSOR_TYPE_AMD_GPU
inline constexpr unsigned kAmdsmiUuidSize = 38;               // AMDSMI_GPU_UUID_SIZE

inline constexpr amdsmi_clk_type_t kClkGfx = 0;  // AMDSMI_CLK_TYPE_GFX (= SYS)
inline constexpr amdsmi_clk_type_t kClkMem = 4;  // AMDSMI_CLK_TYPE_MEM

inline constexpr amdsmi_temperature_type_t kTempEdge = 0;
inline constexpr amdsmi_temperature_type_t kTempHotspot = 1;  // = JUNCTION
inline constexpr amdsmi_temperature_type_t kTempVram = 2;
inline constexpr amdsmi_temperature_metric_t kTempCurrent = 0;
inline constexpr amdsmi_temperature_metric_t kTempCritical = 5;
inline constexpr amdsmi_temperature_metric_t kTempEmergency = 7;

// amdsmi_bdf_t: function bits 0-2, device 3-7, bus 8-15, domain 16-63 (a union with a uint64_t).
using amdsmi_bdf_t = std::uint64_t;

// Every layout of amdsmi_engine_usage_t (percent).
struct amdsmi_engine_usage_t {
  std::uint32_t gfx_activity;
  std::uint32_t umc_activity;
  std::uint32_t mm_activity;
  std::uint32_t reserved[13];
};
static_assert(sizeof(amdsmi_engine_usage_t) == 64);

// Every layout of amdsmi_vram_usage_t (MB).
struct amdsmi_vram_usage_t {
  std::uint32_t vram_total;
  std::uint32_t vram_used;
  std::uint32_t reserved[2];
};
static_assert(sizeof(amdsmi_vram_usage_t) == 16);

// amdsmi_power_cap_info_t of 6.0 and later (µW on bare metal).
struct amdsmi_power_cap_info_t {
  std::uint64_t power_cap;
  std::uint64_t default_power_cap;
  std::uint64_t dpm_cap;
  std::uint64_t min_power_cap;
  std::uint64_t max_power_cap;
  std::uint64_t reserved[3];
};
static_assert(sizeof(amdsmi_power_cap_info_t) == 64);

// amdsmi_error_count_t of 6.0 and later.
struct amdsmi_error_count_t {
  std::uint64_t correctable_count;
  std::uint64_t uncorrectable_count;
  std::uint64_t deferred_count;
  std::uint64_t reserved[5];
};
static_assert(sizeof(amdsmi_error_count_t) == 64);

// amdsmi_kfd_info_t of 24.7 and later (ROCm 6.3).
struct amdsmi_kfd_info_t {
  std::uint64_t kfd_id;
  std::uint32_t node_id;
  std::uint32_t current_partition_id;  // 0xFFFFFFFF: not supported
  std::uint32_t reserved[12];
};
static_assert(sizeof(amdsmi_kfd_info_t) == 64);

// Room for any version of the structs read by offset: the largest, amdsmi_violation_status_t of
// the 26.x headers, is under 8 KiB.
inline constexpr std::size_t kStructBuffer = 16384;

// ---- ROCm SMI (librocm_smi64.so) ------------------------------------------------------------

using rsmi_status_t = std::uint32_t;      // enum, up to 0xFFFFFFFF
using rsmi_power_type_t = std::uint32_t;  // RSMI_POWER_TYPE

inline constexpr rsmi_status_t kRsmiSuccess = 0;
inline constexpr rsmi_status_t kRsmiInvalidArgs = 1;
inline constexpr rsmi_status_t kRsmiNotSupported = 2;
inline constexpr rsmi_status_t kRsmiPermission = 4;
inline constexpr rsmi_status_t kRsmiInputOutOfBounds = 7;
inline constexpr rsmi_status_t kRsmiInitError = 8;
inline constexpr rsmi_status_t kRsmiNotYetImplemented = 9;
inline constexpr rsmi_status_t kRsmiNotFound = 10;

inline constexpr rsmi_power_type_t kRsmiAveragePower = 0;
inline constexpr rsmi_power_type_t kRsmiCurrentPower = 1;
inline constexpr std::uint32_t kRsmiMemTypeVram = 0;  // RSMI_MEM_TYPE_VRAM
inline constexpr std::uint32_t kRsmiTempEdge = 0;     // RSMI_TEMP_TYPE_EDGE
inline constexpr std::uint32_t kRsmiTempJunction = 1;
inline constexpr std::uint32_t kRsmiTempMemory = 2;
inline constexpr std::uint32_t kRsmiTempCurrent = 0;  // RSMI_TEMP_CURRENT

struct rsmi_version_t {
  std::uint32_t major;
  std::uint32_t minor;
  std::uint32_t patch;
  const char* build;
};

}  // namespace joules::amd
