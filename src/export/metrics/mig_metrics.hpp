#pragma once
// The MIG series of `joules serve` (docs/metrics.md, "MIG"): for each GPU in MIG mode, one series
// per MIG device (a compute instance inside a GPU instance) with what the driver reports per
// instance (memory), labelled with the GPU's own labels plus `gpu_instance`, `compute_instance`
// and `mig_profile`; and per GPU, whether it is in MIG mode and how many instances share it.
// With dcgm_compat, the instances' memory again under dcgm-exporter's names, with its
// `GPU_I_PROFILE` and `GPU_I_ID` labels (docs/nvml-notes.md §10.2).
//
// Power and energy are the whole GPU's (docs/nvml-notes.md §9.3): they stay on the GPU's series
// only, never on an instance's, so a sum over joules_gpu_energy_joules_total counts each GPU once
// however many instances share it; `joules_gpu_mig_instances` says that they share it.
//
// Thread-safety: none; owned by gpu_metrics.

#include <string>
#include <vector>

#include "backends/health.hpp"
#include "export/metrics/exposition.hpp"
#include "kubelet/pod_resources.hpp"

namespace joules::exporter {

// An instance's labels in joules' names: the GPU's labels (`gpu_labels`, the base labels
// included) then gpu_instance, compute_instance, mig_profile.
label_set mig_labels_of(const label_set& gpu_labels, const mig_instance_reading& m);

// dcgm-exporter's families that a GPU instance writes once more (--dcgm-compat), each nullptr
// without it.
struct dcgm_mig_families {
  metric_family* fb_used = nullptr;        // DCGM_FI_DEV_FB_USED
  metric_family* fb_free = nullptr;        // DCGM_FI_DEV_FB_FREE
  metric_family* sm_active = nullptr;      // DCGM_FI_PROF_SM_ACTIVE
  metric_family* sm_occupancy = nullptr;   // DCGM_FI_PROF_SM_OCCUPANCY
  metric_family* tensor_active = nullptr;  // DCGM_FI_PROF_PIPE_TENSOR_ACTIVE
  metric_family* dram_active = nullptr;    // DCGM_FI_PROF_DRAM_ACTIVE
};

class mig_metrics {
 public:
  // Registers joules' MIG families on `e`.
  mig_metrics(exposition& e, const dcgm_mig_families& dcgm);

  // Adds one GPU's MIG series.  `dcgm` holds dcgm-exporter's labels of the GPU (empty: none),
  // `dcgm_at` the position after which GPU_I_PROFILE and GPU_I_ID go (after modelName).  An
  // instance that one container holds (`pods`, by its MIG UUID; nullptr: none) carries its
  // pod, namespace and container.
  void fill(const health_reading& h, const label_set& gpu_labels, const label_set& dcgm,
            std::size_t dcgm_at, const kubelet::device_pods* pods = nullptr);

 private:
  metric_family* mode_ = nullptr;
  metric_family* instances_ = nullptr;
  metric_family* info_ = nullptr;
  metric_family* total_ = nullptr;
  metric_family* used_ = nullptr;
  // GPM of each GPU instance, once per GPU instance.
  metric_family* sm_active_ = nullptr;
  metric_family* sm_occupancy_ = nullptr;
  metric_family* tensor_active_ = nullptr;
  metric_family* dram_active_ = nullptr;
  dcgm_mig_families dcgm_;
};

}  // namespace joules::exporter
