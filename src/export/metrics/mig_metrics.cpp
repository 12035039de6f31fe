#include "export/metrics/mig_metrics.hpp"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

namespace joules::exporter {

label_set mig_labels_of(const label_set& gpu_labels, const mig_instance_reading& m) {
  return gpu_labels.with("gpu_instance", std::to_string(m.gpu_instance))
      .with("compute_instance", std::to_string(m.compute_instance))
      .with("mig_profile", m.profile);
}

mig_metrics::mig_metrics(exposition& e, const dcgm_mig_families& dcgm) : dcgm_(dcgm) {
  mode_ = &e.add_family("joules_gpu_mig_mode",
                        "1 when the GPU is in MIG mode, 0 when it is not (MIG-capable GPUs only).",
                        metric_type::gauge);
  instances_ = &e.add_family(
      "joules_gpu_mig_instances",
      "MIG devices on the GPU. They share its power and energy, which joules reports once, on the "
      "GPU's own series (joules_gpu_power_watts, joules_gpu_energy_joules_total), never per "
      "instance.",
      metric_type::gauge);
  info_ = &e.add_family("joules_gpu_mig_info",
                        "A MIG device of the GPU, as labels: gpu_instance, compute_instance, "
                        "mig_profile and its UUID (mig_uuid).",
                        metric_type::info);
  total_ = &e.add_family("joules_gpu_mig_memory_total_bytes", "Memory of the MIG device, in bytes.",
                         metric_type::gauge);
  used_ = &e.add_family("joules_gpu_mig_memory_used_bytes",
                        "Memory of the MIG device in use, in bytes.", metric_type::gauge);
  sm_active_ = &e.add_family("joules_gpu_mig_sm_active_ratio",
                             "GPM of a GPU instance: share of cycles an SM had at least one warp "
                             "(0-1; Hopper and newer), by gpu_instance.",
                             metric_type::gauge);
  sm_occupancy_ = &e.add_family("joules_gpu_mig_sm_occupancy_ratio",
                                "GPM of a GPU instance: resident warps over the maximum (0-1; "
                                "Hopper and newer), by gpu_instance.",
                                metric_type::gauge);
  tensor_active_ = &e.add_family("joules_gpu_mig_tensor_active_ratio",
                                 "GPM of a GPU instance: share of cycles a tensor pipe was active "
                                 "(0-1; Hopper and newer), by gpu_instance.",
                                 metric_type::gauge);
  dram_active_ = &e.add_family("joules_gpu_mig_dram_active_ratio",
                               "GPM of a GPU instance: share of cycles device memory was busy "
                               "(0-1; Hopper and newer), by gpu_instance.",
                               metric_type::gauge);
}

namespace {

std::optional<double> mig_bytes(const std::optional<std::uint64_t>& v) {
  return v ? std::optional(static_cast<double>(*v)) : std::nullopt;
}

std::optional<double> mig_ratio(const std::optional<double>& percent) {
  return percent ? std::optional(*percent / 100.0) : std::nullopt;
}

void add_mig_ratio(metric_family* f, const label_set& l, const std::optional<double>& percent) {
  if (f != nullptr) f->add_if_known(l, mig_ratio(percent));
}

// dcgm-exporter's labels of an instance: the GPU's, with GPU_I_PROFILE and GPU_I_ID after the
// first `at` of them (docs/nvml-notes.md §10.2).
label_set dcgm_mig_labels(const label_set& dcgm, std::size_t at, const mig_instance_reading& m) {
  label_set out;
  const auto labels = dcgm.labels();
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i == at) {
      out.add("GPU_I_PROFILE", m.profile);
      out.add("GPU_I_ID", std::to_string(m.gpu_instance));
    }
    out.add(labels[i].name, labels[i].value);
  }
  if (at >= labels.size()) {
    out.add("GPU_I_PROFILE", m.profile);
    out.add("GPU_I_ID", std::to_string(m.gpu_instance));
  }
  return out;
}

}  // namespace

namespace {

// The pod labels of a MIG device that one container holds; empty otherwise.
const kubelet::pod_ref* mig_owner(const kubelet::device_pods* pods, const mig_instance_reading& m) {
  if (pods == nullptr || m.uuid.empty()) return nullptr;
  const auto& owners = pods->owners(m.uuid);
  return owners.size() == 1 ? &owners.front() : nullptr;
}

label_set with_pod(label_set l, const kubelet::pod_ref* owner) {
  if (owner != nullptr) {
    l.add("pod", owner->pod)
        .add("namespace", owner->pod_namespace)
        .add("container", owner->container);
  }
  return l;
}

}  // namespace

void mig_metrics::fill(const health_reading& h, const label_set& gpu_labels, const label_set& dcgm,
                       std::size_t dcgm_at, const kubelet::device_pods* pods) {
  if (!h.mig_enabled) return;
  mode_->add(gpu_labels, *h.mig_enabled ? 1.0 : 0.0);
  if (!*h.mig_enabled) return;
  // A driver that lists one instance twice must not make the scrape fail on a duplicate series.
  std::vector<std::pair<unsigned, unsigned>> seen;
  std::vector<unsigned> seen_gpu_instances;
  for (const auto& m : h.mig_instances) {
    const std::pair ids{m.gpu_instance, m.compute_instance};
    if (std::find(seen.begin(), seen.end(), ids) != seen.end()) continue;
    seen.push_back(ids);
    const kubelet::pod_ref* owner = mig_owner(pods, m);
    const label_set l = with_pod(mig_labels_of(gpu_labels, m), owner);
    info_->add_info(l.with("mig_uuid", m.uuid));
    total_->add_if_known(l, mig_bytes(m.memory_total_bytes));
    used_->add_if_known(l, mig_bytes(m.memory_used_bytes));
    // Memory and GPM belong to the GPU instance, which dcgm-exporter labels by GPU_I_ID alone:
    // once per GPU instance, from its first compute instance.
    if (std::find(seen_gpu_instances.begin(), seen_gpu_instances.end(), m.gpu_instance) !=
        seen_gpu_instances.end()) {
      continue;
    }
    seen_gpu_instances.push_back(m.gpu_instance);
    const label_set gi = with_pod(gpu_labels.with("gpu_instance", std::to_string(m.gpu_instance))
                                      .with("mig_profile", m.profile),
                                  owner);
    add_mig_ratio(sm_active_, gi, m.sm_activity_percent);
    add_mig_ratio(sm_occupancy_, gi, m.sm_occupancy_percent);
    add_mig_ratio(tensor_active_, gi, m.tensor_activity_percent);
    add_mig_ratio(dram_active_, gi, m.dram_bandwidth_percent);
    if (dcgm.empty()) continue;
    const label_set d = with_pod(dcgm_mig_labels(dcgm, dcgm_at, m), owner);
    add_mig_ratio(dcgm_.sm_active, d, m.sm_activity_percent);
    add_mig_ratio(dcgm_.sm_occupancy, d, m.sm_occupancy_percent);
    add_mig_ratio(dcgm_.tensor_active, d, m.tensor_activity_percent);
    add_mig_ratio(dcgm_.dram_active, d, m.dram_bandwidth_percent);
    if (dcgm_.fb_used == nullptr || dcgm_.fb_free == nullptr) continue;
    constexpr double kMiB = 1.0 / 1048576.0;
    if (m.memory_used_bytes)
      dcgm_.fb_used->add(d, static_cast<double>(*m.memory_used_bytes) * kMiB);
    if (m.memory_total_bytes && m.memory_used_bytes) {
      const double total = static_cast<double>(*m.memory_total_bytes);
      const double used = static_cast<double>(*m.memory_used_bytes);
      dcgm_.fb_free->add(d, (total > used ? total - used : 0.0) * kMiB);
    }
  }
  instances_->add(gpu_labels, static_cast<double>(seen.size()));
}

}  // namespace joules::exporter
