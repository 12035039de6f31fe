#pragma once
// XID errors of one NVML device, through NVML's events (docs/nvml-notes.md §5.13, docs/xid.md).
//
// The first read() creates an event set and registers the device for XID critical errors; every
// read() then takes what the driver queued since, with a timeout of 0 (it never waits), at most
// kMaxPerRead events at a time.  The counts are since the registration: XIDs from before joules
// started are in the kernel log only.  A device or driver without events (no symbol, a failed
// registration) leaves XIDs unknown and is never asked again.
//
// Not thread-safe: owned and called by the sampler thread only.

#include <cstdint>
#include <optional>
#include <vector>

#include "backends/health.hpp"
#include "backends/nvml/nvml_library.hpp"

namespace joules::nvml {

class xid_watch {
 public:
  // Events taken per read at most: a storm of XIDs is counted over several reads, never by one
  // long read.
  static constexpr int kMaxPerRead = 64;

  xid_watch(const entry_points& fn, nvmlDevice_t device);
  ~xid_watch();
  xid_watch(const xid_watch&) = delete;
  xid_watch& operator=(const xid_watch&) = delete;

  // Drains the queued events into the counts and writes them into `h`.
  void read(health_reading& h);
  bool supported() const { return set_ != nullptr; }

 private:
  void open();
  void count(unsigned xid);

  const entry_points& fn_;
  nvmlDevice_t device_;
  nvmlEventSet_t set_ = nullptr;
  bool tried_ = false;
  std::vector<xid_count> counts_;  // by XID number, ascending
  std::optional<unsigned> last_;
};

}  // namespace joules::nvml
