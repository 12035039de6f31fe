#pragma once
// Health readings of one Level Zero device (backend::read_health): utilisation (from an engine
// group's active time), memory, temperatures, GPU and memory clocks with their throttle reasons,
// RAS error counts and the PCIe link.  The handles of each kind are enumerated at the first
// read; a kind that does not answer then is off for good.
//
// Not thread-safe: owned and called by the sampler thread only.

#include <optional>
#include <string>
#include <vector>

#include "backends/health.hpp"
#include "backends/levelzero/ze_library.hpp"

namespace joules::ze {

// Throttle reasons (zes_freq_throttle_reason_flags_t) in NVML's bit layout (health.hpp).
clock_events decode_throttle_reasons(std::uint32_t flags);

class health_reader {
 public:
  health_reader(const entry_points& fn, zes_device_handle_t device);
  health_reader(const health_reader&) = delete;
  health_reader& operator=(const health_reader&) = delete;

  health_reading read();
  std::vector<std::string> supported() const;

 private:
  void enumerate();
  void read_frequency(health_reading& h);
  void read_temperature(health_reading& h);
  void read_memory(health_reading& h);
  void read_activity(health_reading& h);
  void read_ras(health_reading& h);
  void read_pcie(health_reading& h);

  const entry_points& fn_;
  zes_device_handle_t device_;
  bool enumerated_ = false;
  std::optional<zes_freq_handle_t> gpu_freq_, mem_freq_;
  std::optional<double> gpu_max_mhz_, mem_max_mhz_;
  std::optional<zes_temp_handle_t> gpu_temp_, mem_temp_;
  std::optional<double> temp_max_c_;
  std::vector<zes_mem_handle_t> memories_;
  std::optional<zes_engine_handle_t> engine_;
  std::optional<zes_engine_stats_t> last_activity_;
  std::vector<zes_ras_handle_t> correctable_, uncorrectable_;
  std::optional<int> pcie_max_gen_, pcie_max_width_;
  bool pcie_ = false;
  // Which kinds answered, for doctor.
  bool freq_ok_ = false, temp_ok_ = false, mem_ok_ = false, activity_ok_ = false, ras_ok_ = false,
       pcie_ok_ = false;
};

}  // namespace joules::ze
