#pragma once
// The per-GPU metrics of `joules serve` (a node exporter): power, energy, and every health reading
// the backend has (utilisation, memory, temperatures, clocks, throttle reasons, ECC and remapped
// rows, PCIe, GPM), under `joules_gpu_*` names; with dcgm_compat, the same readings again under
// dcgm-exporter's names and labels (docs/nvml-notes.md §10), so that NVIDIA's Grafana dashboard
// works unchanged.  Every name, type, unit and label is listed in docs/metrics.md.
//
// CPU packages and DRAM (RAPL devices of the same backend, device_info::kind) get
// `joules_cpu_*` and `joules_dram_*` power and energy.
//
// With --kubernetes, the containers holding each GPU and MIG device (kubelet/pod_watcher.hpp):
// `pod`, `namespace` and `container` on the series of a GPU or MIG device one container holds,
// and one joules_gpu_pod_info series per container and device.  A GPU shared by several
// containers (time-slicing, or MIG instances) keeps its energy on series without pod labels, so
// that a sum counts it once.
//
// Filled from the sampler's latest snapshot: a scrape never calls the backend.  A reading the
// device does not have is left out (unknown is not zero).
//
// Thread-safety: none; one per exposition, used by the thread that owns it.

#include <optional>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "export/metrics/exposition.hpp"
#include "export/metrics/mig_metrics.hpp"
#include "kubelet/pod_resources.hpp"
#include "sampler/sampler.hpp"

namespace joules::exporter {

// A GPU's own labels on every series about it: `gpu` (its index), `uuid`, `model`, and `vendor`
// when the backend knows it.
label_set gpu_labels_of(const device_info& d);

class gpu_metrics {
 public:
  // Registers the families on `e`.  `devices` are the sampled ones, in snapshot order; `base`
  // holds the labels every series carries (hostname and user labels), written after the GPU's
  // own (gpu_labels_of).
  gpu_metrics(exposition& e, std::vector<device_info> devices, const label_set& base,
              const backend_meta& meta, bool dcgm_compat);

  // Refills the families' samples from `snap` (the caller cleared the exposition), with the
  // pod labels of `pods` (nullptr: none).
  void fill(const sampler_snapshot& snap, const kubelet::device_pods* pods = nullptr);

 private:
  struct gpu_labels {
    label_set labels;
    label_set info;                   // labels + pci_bus_id, architecture, driver
    std::vector<label_set> throttle;  // labels + reason=..., in kThrottleReasons order
    std::vector<label_set> ecc;       // labels + type, scope
    std::vector<label_set> retired;   // labels + cause
    std::vector<label_set> remapped;  // labels + type
    label_set dcgm;                   // dcgm-exporter's labels
  };
  void fill_dcgm(const device_info& info, const sampler_snapshot::device& d,
                 const label_set& labels);
  gpu_labels make_labels(const device_info& d, const kubelet::pod_ref* owner) const;
  // The labels of GPU `k` held by `owner`, made once per owner.
  const gpu_labels& owned_labels(std::size_t k, const kubelet::pod_ref& owner);
  void fill_pods(const device_info& info, const gpu_labels& g, const health_reading* h,
                 const kubelet::device_pods& pods);

  label_set base_;
  label_set user_;
  std::string host_;
  std::string driver_;
  backend_meta meta_;
  bool dcgm_compat_ = false;
  std::vector<std::optional<std::pair<kubelet::pod_ref, gpu_labels>>> owned_;
  metric_family* pod_info_ = nullptr;

  std::vector<device_info> devices_;
  std::vector<gpu_labels> gpus_;
  std::vector<metric_family*> families_;  // one per entry of the simple-metric table
  metric_family* info_ = nullptr;
  metric_family* lost_ = nullptr;
  metric_family* throttle_ = nullptr;
  metric_family* ecc_ = nullptr;
  metric_family* xid_ = nullptr;
  metric_family* nvlink_errors_ = nullptr;
  metric_family* nvlink_up_ = nullptr;
  metric_family* nvlink_link_errors_ = nullptr;
  metric_family* retired_ = nullptr;
  metric_family* remapped_ = nullptr;
  metric_family* cpu_power_ = nullptr;
  metric_family* cpu_energy_ = nullptr;
  metric_family* dram_power_ = nullptr;
  metric_family* dram_energy_ = nullptr;
  std::vector<metric_family*> dcgm_;  // one per entry of the dcgm table; empty without compat
  std::optional<mig_metrics> mig_;
};

}  // namespace joules::exporter
