#pragma once
// The MIG layout of one NVML GPU and each instance's memory (docs/nvml-notes.md §9.3): whether
// the GPU is in MIG mode, and for each MIG device (a compute instance inside a GPU instance) its
// UUID, name, profile, GPU instance and compute instance ids, memory total and used, and the GPM
// metrics of its GPU instance (Hopper and newer).  Power and energy are the GPU's alone: nothing
// here reads them.
//
// The layout (mode, handles, ids, names) is read at the first read() and again on each slow read
// (instances are created and destroyed by an administrator, rarely); memory and GPM at every read
// (GPM keeps its last figures between samples at least 100 ms apart: nvml_gpm.hpp).  A GPU
// whose driver has no MIG calls, or that answers NOT_SUPPORTED to nvmlDeviceGetMigMode (before
// Ampere), is never asked again.
//
// Not thread-safe: owned and called by the sampler thread only.

#include <map>
#include <memory>
#include <string_view>
#include <vector>

#include "backends/health.hpp"
#include "backends/nvml/nvml_gpm.hpp"
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
  // The GPM figures of each GPU instance, read once per read() whatever its compute instances.
  void read_gpm();

  const entry_points& fn_;
  nvmlDevice_t device_;
  bool off_ = false;  // no MIG on this GPU or driver: never asked again
  bool read_once_ = false;
  bool enabled_ = false;
  std::vector<instance> instances_;
  // One GPM reader per GPU instance id, kept across layout reads (a reader needs two samples).
  std::map<unsigned, std::unique_ptr<gpm_reader>> gpm_;
};

}  // namespace joules::nvml
