#pragma once
// The slowly varying state of a device that joules' `health` readings and the peers' monitors
// poll: utilisation, memory, temperatures, clocks, fans, ECC, PCIe.  Constants (defaults below,
// or the device's `health` object) that a device's `changes` replace from given instants on.

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace fake_nvml {

struct device_health {
  unsigned int gpu_util_percent = 0;
  unsigned int memory_util_percent = 0;
  unsigned int encoder_util_percent = 0;
  unsigned int decoder_util_percent = 0;
  // GPM (Hopper+) metrics, percent.
  double sm_util_percent = 0.0;
  double sm_occupancy_percent = 0.0;
  double tensor_util_percent = 0.0;
  double dram_bw_util_percent = 0.0;

  unsigned long long memory_total_bytes = 85520809984ULL;   // H100 80GB: 81559 MiB
  unsigned long long memory_reserved_bytes = 536870912ULL;  // 512 MiB
  unsigned long long memory_used_bytes = 0;                 // excluding reserved

  unsigned int temperature_c = 40;
  unsigned int memory_temperature_c = 45;
  unsigned int shutdown_temperature_c = 92;
  unsigned int slowdown_temperature_c = 89;
  unsigned int memory_max_temperature_c = 95;
  unsigned int gpu_max_temperature_c = 87;

  // MHz, indexed by clock type: graphics, SM, memory, video.
  unsigned int clock_mhz[4] = {1980, 1980, 2619, 1545};
  unsigned int max_clock_mhz[4] = {1980, 1980, 2619, 1980};
  unsigned long long clocks_event_reasons = 0;
  unsigned int performance_state = 0;

  unsigned int fan_count = 0;  // an SXM board has no fan: fan getters are NOT_SUPPORTED
  unsigned int fan_speed_percent = 30;

  bool ecc_enabled = true;
  unsigned long long ecc_corrected = 0;    // volatile: since the driver loaded
  unsigned long long ecc_uncorrected = 0;  // volatile
  // Aggregate (lifetime) counts; never below the volatile ones (the parser raises them).
  unsigned long long ecc_corrected_aggregate = 0;
  unsigned long long ecc_uncorrected_aggregate = 0;
  unsigned int retired_pages = 0;             // retired for double-bit errors
  unsigned int retired_pages_single_bit = 0;  // retired for repeated single-bit errors
  bool retirement_pending = false;            // pages wait for a reset to be retired
  unsigned int remapped_rows_corrected = 0;
  unsigned int remapped_rows_uncorrected = 0;
  bool remap_pending = false;  // rows wait for a reset to be remapped
  bool remap_failure = false;  // a row could not be remapped

  unsigned int pcie_generation = 5;
  unsigned int pcie_width = 16;
  unsigned int pcie_max_generation = 5;
  unsigned int pcie_max_width = 16;
  unsigned int pcie_replay_counter = 0;
  unsigned int pcie_tx_kib_s = 0;
  unsigned int pcie_rx_kib_s = 0;
  // NVLink throughput over all links (GPM metrics 60/61, in MiB/s there).
  unsigned int nvlink_tx_kib_s = 0;
  unsigned int nvlink_rx_kib_s = 0;

  // NVLink: how many links (0: none, the calls answer NOT_SUPPORTED), which are down (bit per
  // link), and the error counts over all links (fields 38, 45, 52, 59).
  unsigned int nvlink_links = 0;
  unsigned long long nvlink_down_mask = 0;
  unsigned long long nvlink_crc_flit_errors = 0;
  unsigned long long nvlink_crc_data_errors = 0;
  unsigned long long nvlink_replay_errors = 0;
  unsigned long long nvlink_recovery_errors = 0;
  // The link every error of the totals above is on (nvmlDeviceGetNvLinkErrorCounter): the other
  // links have none.
  unsigned int nvlink_errors_link = 0;

  bool persistence_mode = true;
};

// Reads a `health` object (every key optional) over `base`: the defaults for a device's own
// `health`, the state before it for a `changes` entry.  Throws scenario_error.
device_health parse_health(const nlohmann::json& health, const std::string& path,
                           const device_health& base = {});

}  // namespace fake_nvml
