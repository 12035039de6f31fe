#pragma once
// Pure decoding of what AMD SMI and ROCm SMI hand back: the library version and the layouts it
// implies, structs read by offset (their layout changed between versions: docs/amd-notes.md §3),
// the energy counter's unit, PCI addresses and the grouping of compute partitions into GPUs.
// No dlopen, no driver: unit-tested with made-up buffers.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backends/health.hpp"

namespace joules::amd {

// AMD SMI's version: year.major.minor up to 24.x, major.minor.release from 25 on (the struct
// lost its `year`); here always as major.minor.release, so 24.7.0 and 26.1.0.
struct lib_version {
  unsigned major = 0;
  unsigned minor = 0;
  unsigned release = 0;
  unsigned number() const { return major * 100 + minor; }  // as amdsmi_symbols.def's `since`
};

// amdsmi_version_t of any version, from the buffer amdsmi_get_lib_version filled: its first
// 32-bit word is the year (23, 24) in the old layout and the major (25, 26...) in the new one.
lib_version decode_version(std::span<const std::byte> buf);

// Fields of amdsmi_power_info_t, in W; nullopt where the library says unsupported (UINT32_MAX,
// or 0xFFFF from the 16-bit metrics it comes from) or the layout has no such field.
struct power_fields {
  std::optional<std::uint32_t> current_w;  // MI300 and newer
  std::optional<std::uint32_t> average_w;  // MI200 and older, Radeon
  std::optional<std::uint64_t> socket_w;   // 26.x and newer
};
power_fields decode_power_info(std::span<const std::byte> buf, lib_version v);

// The first three fields of amdsmi_clk_info_t (the same offsets in every version), in MHz.
struct clock_fields {
  std::uint32_t current_mhz = 0;
  std::uint32_t min_mhz = 0;
  std::uint32_t max_mhz = 0;
};
clock_fields decode_clock_info(std::span<const std::byte> buf);

// amdsmi_pcie_info_t of 24.5 and later (earlier versions: nullopt).
struct pcie_fields {
  unsigned width = 0;
  unsigned max_width = 0;
  unsigned generation = 0;      // from the current speed in MT/s; 0 when unknown
  unsigned max_generation = 0;  // from the maximum speed
  std::uint64_t replays = 0;
};
std::optional<pcie_fields> decode_pcie_info(std::span<const std::byte> buf, lib_version v);

// The PCIe generation of a link speed in MT/s (2500 -> 1 ... 64000 -> 6); 0 when unknown.
unsigned pcie_generation_of(std::uint32_t mt_per_s);

// The clock event reasons amdsmi_violation_status_t says are active, in NVML's bit layout
// (health.hpp); nullopt for versions whose layout joules does not know (before 24.7, 25.x).
std::optional<clock_events> decode_violation_status(std::span<const std::byte> buf, lib_version v);

// The unique id in amdsmi_asic_info_t::asic_serial (16 hex digits in the versions whose layout
// joules knows), as ROCr writes it in its UUIDs: lowercase hex, no 0x.  nullopt when unknown.
std::optional<std::string> decode_asic_unique_id(std::span<const std::byte> buf, lib_version v);

// A NUL-terminated string at the start of a buffer (market name, driver version).
std::string leading_string(std::span<const std::byte> buf, std::size_t max_len);

// The energy counter's unit in µJ.  The kernel counts energy in units of 2^-16 J (15.2587890625
// µJ: amdgpu's gpu_metrics), and ROCm SMI reports that unit rounded to 15.3F, hard-coded for
// every ASIC: that rounding would add 0.27 % to every joule, so it is replaced by the exact
// unit.  Any other resolution is taken as reported.
inline constexpr double kEnergyUnitUj = 1e6 / 65536.0;
double counter_unit_uj(float reported);

// A PCI address from AMD SMI's amdsmi_bdf_t (function bits 0-2, device 3-7, bus 8-15, domain
// 16-63) or from ROCm SMI's BDFID (domain 32-63, partition 28-31, bus 8-15, device 3-7,
// function 0-2).
struct pci_address {
  std::uint64_t domain = 0;
  unsigned bus = 0;
  unsigned device = 0;
  unsigned function = 0;
  std::optional<unsigned> partition;  // ROCm SMI's BDFID bits 28-31, when set
};
pci_address from_amdsmi_bdf(std::uint64_t bdf);
pci_address from_rsmi_bdfid(std::uint64_t bdfid);
std::string format_pci(const pci_address& a);  // "0000:c1:00.0", as amd-smi writes it

// The processors a library enumerates, grouped into GPUs: the compute partitions of one GPU
// (XCPs) share its PCI bus and device and differ in function (docs/amd-notes.md §6).
struct processor_place {
  pci_address pci;
  std::optional<unsigned> partition_id;  // from the library, when it says
};
struct gpu_group {
  std::size_t primary = 0;           // the processor whose readings are the GPU's (partition 0)
  std::vector<std::size_t> members;  // every processor of the GPU, in enumeration order
};
std::vector<gpu_group> group_partitions(const std::vector<processor_place>& processors);

}  // namespace joules::amd
