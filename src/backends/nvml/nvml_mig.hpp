#pragma once
// The MIG layout of one NVML GPU and each instance's memory (docs/nvml-notes.md §9.3): whether
// the GPU is in MIG mode, and for each MIG device (a compute instance inside a GPU instance) its
// UUID, name, profile, GPU instance and compute instance ids, memory total and used.  Power and
// energy are the GPU's alone: nothing here reads them.
//
// The layout (mode, handles, ids, names) is read at the first read() and again on each slow read
// (instances are created and destroyed by an administrator, rarely); memory at every read.  A GPU
// whose driver has no MIG calls, or that answers NOT_SUPPORTED to nvmlDeviceGetMigMode (before
// Ampere), is never asked again.
//
// Not thread-safe: owned and called by the sampler thread only.

#include <string_view>
#include <vector>

#include "backends/health.hpp"
#include "backends/nvml/nvml_library.hpp"

namespace joules::nvml {

// The profile in a MIG device's name: "NVIDIA A100-SXM4-40GB MIG 1g.5gb" gives "1g.5gb" (the
// word after the last " MIG "); empty when the name has none.
std::string_view mig_profile_of(std::string_view name);

class mig_reader {
 public:
  mig_reader(const entry_points& fn, nvmlDevice_t device) : fn_(fn), device_(device) {}

  // Fills h.mig_enabled and h.mig_instances; `slow` reads the layout again.
  void read(health_reading& h, bool slow);

 private:
  struct instance {
    nvmlDevice_t handle = nullptr;
    mig_instance_reading info;
  };
  void read_layout();
  void read_memory(instance& m) const;

  const entry_points& fn_;
  nvmlDevice_t device_;
  bool off_ = false;  // no MIG on this GPU or driver: never asked again
  bool read_once_ = false;
  bool enabled_ = false;
  std::vector<instance> instances_;
};

}  // namespace joules::nvml
