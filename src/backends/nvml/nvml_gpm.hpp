#pragma once
// GPM metrics of one NVML device (Hopper and newer, docs/nvml-notes.md §5.9): SM activity and
// occupancy, tensor activity, DRAM bandwidth, PCIe and NVLink throughput.  Metrics are computed
// between two samples taken at least 100 ms apart; between two computations the last results are
// kept, so the first reading of a device has none.  Support is probed once, at the first read().
//
// The same metrics of one GPU instance of a GPU in MIG mode come from nvmlGpmMigSampleGet on the
// GPU's handle with the instance's id (`gpu_instance`).
//
// Not thread-safe: owned and called by the sampler thread only.

#include <array>
#include <memory>
#include <optional>

#include "backends/health.hpp"
#include "backends/nvml/nvml_library.hpp"
#include "util/clock.hpp"

namespace joules::nvml {

class gpm_reader {
 public:
  gpm_reader(const entry_points& fn, nvmlDevice_t device,
             std::optional<unsigned> gpu_instance = std::nullopt)
      : fn_(fn), device_(device), gpu_instance_(gpu_instance) {}
  ~gpm_reader();
  gpm_reader(const gpm_reader&) = delete;
  gpm_reader& operator=(const gpm_reader&) = delete;

  // Fills the GPM fields of `h` (leaves them empty when GPM is unsupported or not yet known).
  void read(health_reading& h);
  // After the first read().
  bool supported() const { return supported_ == true; }

 private:
  void probe();

  const entry_points& fn_;
  nvmlDevice_t device_;
  std::optional<unsigned> gpu_instance_;
  std::optional<bool> supported_;
  // Two samples, alternately the older and the newer.
  std::array<nvmlGpmSample_t, 2> samples_{};
  std::size_t newest_ = 0;
  std::optional<mono_time> taken_;
  // 13 KB with the 333 metric slots a 13.2+ header declares (docs/nvml-notes.md §5.9): allocated
  // once.
  std::unique_ptr<nvmlGpmMetricsGet_t> request_;
  health_reading last_;
};

}  // namespace joules::nvml
