#pragma once
// Health and profiling readings of one NVML device (backend::read_health).
//
// Each reading is probed once, by the first read(): a reading whose call is missing from the
// library or that answers anything but success then is off for good and never asked again
// (STYLE.md: probe once).  Probing at the first read rather than at open keeps `run` and `wrap`,
// which never ask for health, from paying for ~30 extra driver calls per GPU at start.  Later
// failures leave that reading empty for that one read.  Values that cannot change while the
// driver is loaded (thresholds, maxima, ECC mode, default power limit) are read once; error
// counters, persistence mode and the power limit every 5 s.  Calls per GPU and health reading:
// about 15, and 11 more every 5 s.
//
// Not thread-safe: owned and called by the sampler thread only.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/health.hpp"
#include "backend/nvml_gpm.hpp"
#include "nvml/nvml_library.hpp"
#include "util/clock.hpp"

namespace joules::nvml {

class health_reader {
 public:
  health_reader(const entry_points& fn, nvmlDevice_t device);
  health_reader(const health_reader&) = delete;
  health_reader& operator=(const health_reader&) = delete;

  health_reading read();

  // After the first read(): the readings the device answered, by name, and GPM support.
  std::vector<std::string> supported() const;
  bool gpm_supported() const { return gpm_.supported(); }
  bool probed() const { return probed_; }

 private:
  enum class state : std::uint8_t { unknown, on, off };
  enum reading : std::size_t {
    utilization,
    memory_v2,
    memory_v1,
    temperature_v,
    temperature,
    memory_temperature,
    clocks,
    clock_events,
    throttle_reasons,
    fan,
    performance_state,
    ecc_corrected_volatile,
    ecc_uncorrected_volatile,
    ecc_corrected_aggregate,
    ecc_uncorrected_aggregate,
    retired_single,
    retired_double,
    retirement_pending,
    remapped_rows,
    pcie_link,
    pcie_replay,
    pcie_bytes,
    persistence,
    power_limit,
    process_detail,
    process_v3,
    process_v2,
    process_v1,
    kReadingCount
  };

  // Runs `call` unless the reading is off; success turns it on, any failure at the probe (or
  // NOT_SUPPORTED / FUNCTION_NOT_FOUND later) turns it off.  Returns whether it succeeded.
  template <class Call>
  bool attempt(reading r, bool present, Call&& call);

  void read_static();
  void read_slow(health_reading& h);
  static void copy_slow(const health_reading& from, health_reading& to);
  void read_memory(health_reading& h);
  void read_temperatures(health_reading& h);
  void read_clocks(health_reading& h);
  void read_ecc(health_reading& h);
  void read_pcie(health_reading& h);
  void read_processes(health_reading& h);
  bool read_process_kind(health_reading& h, bool graphics);

  const entry_points& fn_;
  nvmlDevice_t device_;
  bool probed_ = false;
  bool lost_ = false;
  std::array<state, kReadingCount> state_{};

  // Read once.
  std::optional<double> slowdown_c_, shutdown_c_, default_limit_w_;
  std::optional<unsigned> max_sm_mhz_, max_mem_mhz_, max_pcie_gen_, max_pcie_width_;
  std::optional<bool> ecc_enabled_;

  // PCIe byte counters (fields 197/198): the previous reading, for rates.
  std::optional<std::array<std::uint64_t, 2>> pcie_bytes_;
  mono_time pcie_bytes_t_{};

  gpm_reader gpm_;

  // The rarely changing readings (read_slow) and when they were read.
  health_reading slow_;
  std::optional<mono_time> slow_at_;
};

}  // namespace joules::nvml
