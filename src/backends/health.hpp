#pragma once
// Health and profiling readings of a device: what `monitor`, `doctor` and `serve` show next to
// power and energy.  Every reading is optional: a device (or driver) that does not support one
// leaves it empty, probed once at open and never asked again (unknown is not zero).
//
// Units are in the names; percentages are 0-100 as NVML reports them.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace joules {

// Clock event ("throttle") reasons.  `raw` is the bitmask in NVML's layout (the backends of
// other vendors map their reasons into it), which dcgm-exporter's names publish as a number
// (docs/nvml-notes.md §7).
struct clock_events {
  std::uint64_t raw = 0;
  bool gpu_idle = false;
  bool sw_power_cap = false;
  bool hw_slowdown = false;
  bool sync_boost = false;
  bool sw_thermal = false;
  bool hw_thermal = false;
  bool hw_power_brake = false;
  bool display_clock = false;
  bool applications_clocks = false;

  // Short names of the active reasons, e.g. {"power_cap", "hw_thermal"}.
  std::vector<std::string> active() const;
};

struct gpu_process {
  unsigned pid = 0;
  std::optional<std::uint64_t> used_memory_bytes;
  bool graphics = false;  // a graphics (not compute) context
  // Its share of the time the GPU's SMs ran kernels, 0-100, averaged over the driver's samples
  // since the previous reading (docs/nvml-notes.md §5.12); 0 when it ran none.  Unknown where the
  // driver does not report per-process utilisation (MIG mode, some boards).
  std::optional<double> sm_util_percent = {};
};

// One MIG device of a GPU in MIG mode (docs/nvml-notes.md §9.3): a compute instance inside a GPU
// instance.  It has its own memory and processes; power and energy stay the whole GPU's, shared
// by every instance on it, and are never read or split per instance.
struct mig_instance_reading {
  std::string uuid;               // MIG-…
  std::string name;               // the driver's name, e.g. "NVIDIA A100-SXM4-40GB MIG 1g.5gb"
  std::string profile;            // the profile in the name ("1g.5gb"); empty when it has none
  unsigned gpu_instance = 0;      // nvmlDeviceGetGpuInstanceId
  unsigned compute_instance = 0;  // nvmlDeviceGetComputeInstanceId
  std::optional<std::uint64_t> memory_total_bytes;
  std::optional<std::uint64_t> memory_used_bytes;
  // GPM of its GPU instance (nvmlGpmMigSampleGet, Hopper and newer), 0-100: the compute
  // instances of one GPU instance show the same figures.
  std::optional<double> sm_activity_percent;
  std::optional<double> sm_occupancy_percent;
  std::optional<double> tensor_activity_percent;
  std::optional<double> dram_bandwidth_percent;
};

// How many XID errors of one number a GPU reported (docs/xid.md).
struct xid_count {
  unsigned xid = 0;
  std::uint64_t count = 0;
};

// One NVLink of a GPU and whether it is up.
struct nvlink_state {
  unsigned link = 0;
  bool active = false;
};

struct health_reading {
  // Utilisation and memory.
  std::optional<unsigned> gpu_util_percent;
  std::optional<unsigned> memory_util_percent;
  // Video engines: share of the driver's sampling period the encoder / decoder ran, 0-100.
  std::optional<unsigned> encoder_util_percent;
  std::optional<unsigned> decoder_util_percent;
  std::optional<std::uint64_t> memory_total_bytes;
  std::optional<std::uint64_t> memory_used_bytes;
  std::optional<std::uint64_t> memory_reserved_bytes;

  // Thermals, clocks, fan.
  std::optional<double> temperature_c;
  std::optional<double> memory_temperature_c;
  std::optional<double> slowdown_temperature_c;
  std::optional<double> shutdown_temperature_c;
  std::optional<unsigned> sm_clock_mhz;
  std::optional<unsigned> memory_clock_mhz;
  std::optional<unsigned> max_sm_clock_mhz;
  std::optional<unsigned> max_memory_clock_mhz;
  std::optional<joules::clock_events> throttle;  // clock event reasons
  std::optional<unsigned> fan_percent;

  // Memory errors.
  std::optional<bool> ecc_enabled;
  std::optional<std::uint64_t> ecc_corrected_volatile;
  std::optional<std::uint64_t> ecc_uncorrected_volatile;
  std::optional<std::uint64_t> ecc_corrected_aggregate;
  std::optional<std::uint64_t> ecc_uncorrected_aggregate;
  std::optional<unsigned> retired_pages_single_bit;
  std::optional<unsigned> retired_pages_double_bit;
  std::optional<bool> retirement_pending;
  std::optional<unsigned> remapped_rows_corrected;
  std::optional<unsigned> remapped_rows_uncorrected;
  std::optional<bool> remap_pending;
  std::optional<bool> remap_failure;

  // PCIe.
  std::optional<unsigned> pcie_generation;
  std::optional<unsigned> pcie_width;
  std::optional<unsigned> pcie_max_generation;
  std::optional<unsigned> pcie_max_width;
  std::optional<std::uint64_t> pcie_replays;
  std::optional<double> pcie_tx_bytes_per_s;
  std::optional<double> pcie_rx_bytes_per_s;

  // Power management.
  std::optional<bool> persistence_mode;
  std::optional<double> power_limit_w;  // enforced
  std::optional<double> default_power_limit_w;
  std::optional<unsigned> performance_state;  // P0 = 0

  // NVLink (docs/nvml-notes.md §5.14): error counts over all links since the driver loaded, and
  // the state of each link the GPU has (empty where it has none or the driver does not say).
  std::optional<std::uint64_t> nvlink_crc_flit_errors;
  std::optional<std::uint64_t> nvlink_crc_data_errors;
  std::optional<std::uint64_t> nvlink_replay_errors;
  std::optional<std::uint64_t> nvlink_recovery_errors;
  // Whether any of the four counts grew since joules' first reading of them.
  std::optional<bool> nvlink_errors_rising;
  std::vector<nvlink_state> nvlink_links;

  // GPM, Hopper and newer (docs/nvml-notes.md §5.9): computed between two readings >= 100 ms apart,
  // so the first reading of a device has none.
  std::optional<double> sm_activity_percent;
  std::optional<double> sm_occupancy_percent;
  std::optional<double> tensor_activity_percent;
  std::optional<double> dram_bandwidth_percent;
  std::optional<double> gpm_pcie_tx_bytes_per_s;
  std::optional<double> gpm_pcie_rx_bytes_per_s;
  std::optional<double> nvlink_tx_bytes_per_s;
  std::optional<double> nvlink_rx_bytes_per_s;

  // MIG: whether the GPU is in MIG mode (unknown where the driver has no MIG), and its instances.
  std::optional<bool> mig_enabled;
  std::vector<mig_instance_reading> mig_instances;

  // XID errors the driver reported since joules started watching the GPU (docs/xid.md): the count
  // per XID number, ascending, and the latest one.  xid_known: the driver delivers XID events, so
  // no counts means none happened (else XIDs are unknown).
  bool xid_known = false;
  std::vector<xid_count> xid_counts;
  std::optional<unsigned> last_xid;

  std::vector<gpu_process> processes;
  bool processes_known = false;
  // The processes' sm_util_percent are known (the driver answers per-process utilisation).
  bool process_utilization_known = false;
};

// What `doctor` reports about a device beyond device_info (backend::probe_capabilities).
struct device_capabilities {
  // Health readings the device answered, by name ("utilization", "ecc", "gpm", ...), in the
  // order health_reading lists them; empty when the backend has none.
  std::vector<std::string> health_readings;
  std::optional<bool> gpm;  // GPM metrics (SM/tensor activity), Hopper and newer
  // The power limit can be set (the driver has the call and a range), and this process may.
  std::optional<bool> power_limit_control;
  std::optional<bool> power_limit_permission;
  std::optional<bool> mig_enabled;
  std::optional<int> compute_capability_major;
  std::optional<int> compute_capability_minor;
};

}  // namespace joules
