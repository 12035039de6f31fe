#pragma once
// Health and profiling readings of one NVML device (backend::read_health).
//
// Each reading is probed once, by the first read(): a reading whose call is missing from the
// library or that answers anything but success then is off for good and never asked again (probed
// once, not retried every tick).  Probing at the first read rather than at open keeps `run` and
// `wrap`, which never ask for health, from paying for ~30 extra driver calls per GPU at start.
// Later failures leave that reading empty for that one read.
//
// Readings come in tiers, so that a live view costs few driver calls (docs/monitor-doctor.md):
// - once: thresholds, maxima, ECC mode, default power limit (they change only with the driver);
// - every read: utilisation, memory, temperatures, clocks, clock-event reasons, fan, PCIe
//   generation and throughput, GPM metrics;
// - slow, at the first read and then at the last read before kSlowEvery (5 s) would have passed
//   since the previous slow one, so that a fault shows within 5 s: ECC counts, retired pages,
//   remapped rows, PCIe replays and width, persistence mode, the enforced power limit;
// - on change: the performance state when a clock changed, the process list when the memory in
//   use changed; else with the slow tier;
// - at most once a second, while the GPU has processes: their SM utilisation;
// - at most once a second: encoder and decoder utilisation (the driver averages them over a
//   sampling period of its own, about a second);
// - every read, without waiting: the XID events queued since the last read (nvml_xid.hpp).
// Field values (memory temperature, PCIe byte counters and most of the slow tier) come from one
// nvmlDeviceGetFieldValues call per read; a field that does not answer at the probe falls back
// to its getter.  Calls per GPU and read on a current driver: 10 (two of them GPM), a fan where
// the board has one, and 5 more on slow reads (PCIe width, persistence mode, performance state,
// the two process lists); one a second for the processes' utilisation while there are any, two a
// second for the video engines, and one event wait per read for XIDs.
//
// Not thread-safe: owned and called by the sampler thread only.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/health.hpp"
#include "backends/nvml/nvml_gpm.hpp"
#include "backends/nvml/nvml_library.hpp"
#include "backends/nvml/nvml_mig.hpp"
#include "backends/nvml/nvml_xid.hpp"
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
    clocks,
    clock_events,
    throttle_reasons,
    fan,
    pcie_generation,
    // Through nvmlDeviceGetFieldValues (kFieldGroups).
    field_memory_temperature,
    field_pcie_bytes,
    field_ecc_corrected_volatile,
    field_ecc_uncorrected_volatile,
    field_ecc_corrected_aggregate,
    field_ecc_uncorrected_aggregate,
    field_retired_single,
    field_retired_double,
    field_retirement_pending,
    field_remapped_rows,
    field_pcie_replay,
    field_power_limit,
    field_nvlink_errors,
    // Getters of the slow tier: fallbacks of the fields above, and two without a field.
    ecc_corrected_volatile,
    ecc_uncorrected_volatile,
    ecc_corrected_aggregate,
    ecc_uncorrected_aggregate,
    retired_single,
    retired_double,
    retirement_pending,
    remapped_rows,
    pcie_replay,
    power_limit,
    pcie_width,
    persistence,
    nvlink_state,
    // On change.
    performance_state,
    process_detail,
    process_v3,
    process_v2,
    process_v1,
    // At most once a second.
    process_utilization,
    encoder,
    decoder,
    kReadingCount
  };
  struct field_group;
  static const field_group kFieldGroups[];

  // Runs `call` unless the reading is off, then settle()s its answer.  Returns whether it
  // succeeded.
  template <class Call>
  bool attempt(reading r, bool present, Call&& call);
  // Success turns the reading on; any failure at the probe (or NOT_SUPPORTED /
  // FUNCTION_NOT_FOUND later) turns it off; GPU_IS_LOST marks the device lost.
  bool settle(reading r, nvmlReturn_t rc);

  bool slow_due(mono_time now) const;
  void read_static();
  void read_fields(health_reading& h, bool slow, mono_time now);
  void apply_field(reading r, const nvmlFieldValue_t* v, health_reading& h, mono_time now);
  void read_slow_getters();
  void read_nvlinks(health_reading& h);
  // Each link's error counts, when the GPU's totals say there are errors and changed since.
  void read_nvlink_link_errors(health_reading& h);
  static void copy_slow(const health_reading& from, health_reading& to);
  void read_memory(health_reading& h);
  void read_temperatures(health_reading& h);
  void read_clocks(health_reading& h);
  void read_performance_state(health_reading& h, bool slow);
  void read_processes(health_reading& h, bool slow);
  bool read_process_kind(std::vector<gpu_process>& out, bool graphics);
  void read_process_utilization(health_reading& h, mono_time now);
  void read_video(health_reading& h, mono_time now);

  const entry_points& fn_;
  nvmlDevice_t device_;
  bool probed_ = false;
  bool lost_ = false;
  std::array<state, kReadingCount> state_{};

  // Read once.
  std::optional<double> slowdown_c_, shutdown_c_, default_limit_w_;
  std::optional<unsigned> max_sm_mhz_, max_mem_mhz_, max_pcie_gen_, max_pcie_width_;
  std::optional<bool> ecc_enabled_;

  // NVLink: the links the GPU answers for (probed at the first slow read), and the error counts
  // of the first slow read, to tell whether they grew since.
  std::vector<unsigned> nvlinks_;
  bool nvlinks_probed_ = false;
  std::optional<std::array<std::uint64_t, 4>> nvlink_errors_;
  // The totals (CRC flit, CRC data, replay, recovery) when each link's counts were last read.
  std::array<std::optional<std::uint64_t>, 4> link_errors_at_{};
  std::vector<joules::nvlink_state> link_errors_;

  // PCIe byte counters (fields 197/198): the previous reading, for rates.
  std::optional<std::array<std::uint64_t, 2>> pcie_bytes_;
  mono_time pcie_bytes_t_{};

  gpm_reader gpm_;
  mig_reader mig_;
  xid_watch xid_;

  // Encoder and decoder utilisation, read at most once a second, and when.
  std::optional<unsigned> encoder_, decoder_;
  std::optional<mono_time> video_at_;

  // The slow tier's values, when they were read, and when read() last ran.
  health_reading slow_;
  std::optional<mono_time> slow_at_;
  std::optional<mono_time> last_read_;

  // The on-change readings: their last values and what they were read at.
  std::optional<unsigned> pstate_;
  std::optional<unsigned> pstate_sm_mhz_, pstate_mem_mhz_;
  std::vector<gpu_process> processes_;
  bool processes_known_ = false;
  std::optional<std::uint64_t> processes_memory_used_;
  std::size_t process_slots_ = 0;  // the longest list seen, to size the next call

  // Per-process SM utilisation: the mean of each pid's samples at the last reading, when that
  // was, and the newest sample's timestamp (the next call asks only for newer ones).
  std::vector<std::pair<unsigned, double>> sm_util_;
  std::optional<mono_time> sm_util_at_;
  bool sm_util_ok_ = false;
  unsigned long long sm_util_seen_us_ = 0;
  std::size_t sm_util_slots_ = 0;
};

template <class Call>
bool health_reader::attempt(reading r, bool present, Call&& call) {
  if (state_[r] == state::off || lost_) return false;
  if (!present) {
    state_[r] = state::off;
    return false;
  }
  return settle(r, std::forward<Call>(call)());
}

}  // namespace joules::nvml
