#include "export/metrics/gpu_metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace joules::exporter {
namespace {

using reading = std::optional<double>;
using device_state = sampler_snapshot::device;
using getter = reading (*)(const device_info&, const device_state&);

template <class T>
reading known(const std::optional<T>& v) {
  return v ? reading(static_cast<double>(*v)) : std::nullopt;
}

// A health reading through a member pointer: h<&health_reading::temperature_c>.
template <auto member>
reading h(const device_info& /*info*/, const device_state& d) {
  return d.health ? known((*d.health).*member) : std::nullopt;
}

struct simple_metric {
  std::string_view name;
  std::string_view help;
  metric_type type;
  getter get;
  double scale = 1.0;  // to SI: percent -> ratio, MHz -> Hz
};

// clang-format off
constexpr std::array kSimple = {
  simple_metric{"joules_gpu_power_watts", "Power draw of the GPU board, in watts (the latest reading).", metric_type::gauge,
    [](const device_info&, const device_state& d) { return d.power_w; }},
  simple_metric{"joules_gpu_energy_joules_total", "Energy used by the GPU since joules started reading it, in joules (its energy counter where it has one, else integrated power).", metric_type::counter,
    [](const device_info&, const device_state& d) { return d.energy_j; }},
  simple_metric{"joules_gpu_power_limit_watts", "Power limit the GPU enforces, in watts.", metric_type::gauge,
    [](const device_info& i, const device_state& d) {
      if (d.health && d.health->power_limit_w) return d.health->power_limit_w;
      return i.power_limit ? reading(i.power_limit->value) : std::nullopt; }},
  simple_metric{"joules_gpu_default_power_limit_watts", "Power limit the GPU boots with, in watts.", metric_type::gauge,
    [](const device_info& i, const device_state& d) {
      if (d.health && d.health->default_power_limit_w) return d.health->default_power_limit_w;
      return i.default_power_limit ? reading(i.default_power_limit->value) : std::nullopt; }},
  simple_metric{"joules_gpu_min_power_limit_watts", "Lowest power limit the GPU accepts, in watts.", metric_type::gauge,
    [](const device_info& i, const device_state&) { return i.min_power_limit ? reading(i.min_power_limit->value) : std::nullopt; }},
  simple_metric{"joules_gpu_max_power_limit_watts", "Highest power limit the GPU accepts, in watts.", metric_type::gauge,
    [](const device_info& i, const device_state&) { return i.max_power_limit ? reading(i.max_power_limit->value) : std::nullopt; }},
  simple_metric{"joules_gpu_utilization_ratio", "Share of the last sample period in which a kernel ran (0-1).", metric_type::gauge,
    h<&health_reading::gpu_util_percent>, 0.01},
  simple_metric{"joules_gpu_memory_utilization_ratio", "Share of the last sample period in which device memory was read or written (0-1).", metric_type::gauge,
    h<&health_reading::memory_util_percent>, 0.01},
  simple_metric{"joules_gpu_encoder_utilization_ratio", "Share of the driver's sampling period in which the video encoder ran (0-1).", metric_type::gauge,
    h<&health_reading::encoder_util_percent>, 0.01},
  simple_metric{"joules_gpu_decoder_utilization_ratio", "Share of the driver's sampling period in which the video decoder ran (0-1).", metric_type::gauge,
    h<&health_reading::decoder_util_percent>, 0.01},
  simple_metric{"joules_gpu_memory_total_bytes", "Device memory, in bytes.", metric_type::gauge,
    h<&health_reading::memory_total_bytes>},
  simple_metric{"joules_gpu_memory_used_bytes", "Device memory in use, in bytes.", metric_type::gauge,
    h<&health_reading::memory_used_bytes>},
  simple_metric{"joules_gpu_memory_reserved_bytes", "Device memory reserved by the driver, in bytes.", metric_type::gauge,
    h<&health_reading::memory_reserved_bytes>},
  simple_metric{"joules_gpu_memory_free_bytes", "Device memory neither used nor reserved, in bytes.", metric_type::gauge,
    [](const device_info&, const device_state& d) -> reading {
      if (!d.health || !d.health->memory_total_bytes || !d.health->memory_used_bytes) return std::nullopt;
      const double used = static_cast<double>(*d.health->memory_used_bytes) +
                          static_cast<double>(d.health->memory_reserved_bytes.value_or(0));
      const double total = static_cast<double>(*d.health->memory_total_bytes);
      return total > used ? total - used : 0.0; }},
  simple_metric{"joules_gpu_temperature_celsius", "GPU die temperature, in degrees Celsius.", metric_type::gauge,
    h<&health_reading::temperature_c>},
  simple_metric{"joules_gpu_memory_temperature_celsius", "Device memory (HBM) temperature, in degrees Celsius.", metric_type::gauge,
    h<&health_reading::memory_temperature_c>},
  simple_metric{"joules_gpu_slowdown_temperature_celsius", "Temperature at which the GPU slows its clocks, in degrees Celsius.", metric_type::gauge,
    h<&health_reading::slowdown_temperature_c>},
  simple_metric{"joules_gpu_shutdown_temperature_celsius", "Temperature at which the GPU shuts down, in degrees Celsius.", metric_type::gauge,
    h<&health_reading::shutdown_temperature_c>},
  simple_metric{"joules_gpu_sm_clock_hertz", "SM clock, in hertz.", metric_type::gauge,
    h<&health_reading::sm_clock_mhz>, 1e6},
  simple_metric{"joules_gpu_memory_clock_hertz", "Memory clock, in hertz.", metric_type::gauge,
    h<&health_reading::memory_clock_mhz>, 1e6},
  simple_metric{"joules_gpu_max_sm_clock_hertz", "Highest SM clock, in hertz.", metric_type::gauge,
    h<&health_reading::max_sm_clock_mhz>, 1e6},
  simple_metric{"joules_gpu_max_memory_clock_hertz", "Highest memory clock, in hertz.", metric_type::gauge,
    h<&health_reading::max_memory_clock_mhz>, 1e6},
  simple_metric{"joules_gpu_fan_speed_ratio", "Fan speed as a share of its maximum (0-1), where the board has a fan.", metric_type::gauge,
    h<&health_reading::fan_percent>, 0.01},
  simple_metric{"joules_gpu_performance_state", "Performance state: 0 (P0) is the fastest.", metric_type::gauge,
    h<&health_reading::performance_state>},
  simple_metric{"joules_gpu_persistence_mode", "1 when persistence mode is on.", metric_type::gauge,
    h<&health_reading::persistence_mode>},
  simple_metric{"joules_gpu_ecc_enabled", "1 when ECC is on.", metric_type::gauge,
    h<&health_reading::ecc_enabled>},
  simple_metric{"joules_gpu_retired_pages_pending", "1 when a page retirement waits for a reboot.", metric_type::gauge,
    h<&health_reading::retirement_pending>},
  simple_metric{"joules_gpu_row_remap_pending", "1 when a row remapping waits for a GPU reset.", metric_type::gauge,
    h<&health_reading::remap_pending>},
  simple_metric{"joules_gpu_row_remap_failure", "1 when a row could not be remapped (the GPU needs service).", metric_type::gauge,
    h<&health_reading::remap_failure>},
  simple_metric{"joules_gpu_pcie_link_generation", "Current PCIe link generation.", metric_type::gauge,
    h<&health_reading::pcie_generation>},
  simple_metric{"joules_gpu_pcie_link_width", "Current PCIe link width, in lanes.", metric_type::gauge,
    h<&health_reading::pcie_width>},
  simple_metric{"joules_gpu_pcie_max_link_generation", "Highest PCIe link generation of the GPU and its slot.", metric_type::gauge,
    h<&health_reading::pcie_max_generation>},
  simple_metric{"joules_gpu_pcie_max_link_width", "Widest PCIe link of the GPU and its slot, in lanes.", metric_type::gauge,
    h<&health_reading::pcie_max_width>},
  simple_metric{"joules_gpu_pcie_replays_total", "PCIe replays (retried transfers).", metric_type::counter,
    h<&health_reading::pcie_replays>},
  simple_metric{"joules_gpu_pcie_tx_bytes_per_second", "PCIe bytes sent by the GPU per second.", metric_type::gauge,
    h<&health_reading::pcie_tx_bytes_per_s>},
  simple_metric{"joules_gpu_pcie_rx_bytes_per_second", "PCIe bytes received by the GPU per second.", metric_type::gauge,
    h<&health_reading::pcie_rx_bytes_per_s>},
  simple_metric{"joules_gpu_sm_active_ratio", "GPM: share of cycles an SM had at least one warp (0-1; Hopper and newer).", metric_type::gauge,
    h<&health_reading::sm_activity_percent>, 0.01},
  simple_metric{"joules_gpu_sm_occupancy_ratio", "GPM: resident warps over the maximum (0-1; Hopper and newer).", metric_type::gauge,
    h<&health_reading::sm_occupancy_percent>, 0.01},
  simple_metric{"joules_gpu_tensor_active_ratio", "GPM: share of cycles a tensor pipe was active (0-1; Hopper and newer).", metric_type::gauge,
    h<&health_reading::tensor_activity_percent>, 0.01},
  simple_metric{"joules_gpu_dram_active_ratio", "GPM: share of cycles device memory was busy (0-1; Hopper and newer).", metric_type::gauge,
    h<&health_reading::dram_bandwidth_percent>, 0.01},
  simple_metric{"joules_gpu_nvlink_tx_bytes_per_second", "GPM: NVLink bytes sent per second (Hopper and newer).", metric_type::gauge,
    h<&health_reading::nvlink_tx_bytes_per_s>},
  simple_metric{"joules_gpu_nvlink_rx_bytes_per_second", "GPM: NVLink bytes received per second (Hopper and newer).", metric_type::gauge,
    h<&health_reading::nvlink_rx_bytes_per_s>},
  simple_metric{"joules_gpu_processes", "Processes with a context on the GPU.", metric_type::gauge,
    [](const device_info&, const device_state& d) -> reading {
      if (!d.health || !d.health->processes_known) return std::nullopt;
      return static_cast<double>(d.health->processes.size()); }},
};

// dcgm-exporter's default counters (docs/nvml-notes.md §10.1) that joules has readings for, in its
// units.
constexpr std::array kDcgm = {
  simple_metric{"DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", metric_type::gauge, h<&health_reading::sm_clock_mhz>},
  simple_metric{"DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz).", metric_type::gauge, h<&health_reading::memory_clock_mhz>},
  simple_metric{"DCGM_FI_DEV_MEMORY_TEMP", "Memory temperature (in C).", metric_type::gauge, h<&health_reading::memory_temperature_c>},
  simple_metric{"DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", metric_type::gauge, h<&health_reading::temperature_c>},
  simple_metric{"DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", metric_type::gauge,
    [](const device_info&, const device_state& d) { return d.power_w; }},
  simple_metric{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Total energy consumption since boot (in mJ).", metric_type::counter,
    [](const device_info&, const device_state& d) { return known(d.counter_mj); }},
  simple_metric{"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "Total number of PCIe retries.", metric_type::counter, h<&health_reading::pcie_replays>},
  simple_metric{"DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", metric_type::gauge, h<&health_reading::gpu_util_percent>},
  simple_metric{"DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).", metric_type::gauge, h<&health_reading::memory_util_percent>},
  simple_metric{"DCGM_FI_DEV_ENC_UTIL", "Encoder utilization (in %).", metric_type::gauge, h<&health_reading::encoder_util_percent>},
  simple_metric{"DCGM_FI_DEV_DEC_UTIL", "Decoder utilization (in %).", metric_type::gauge, h<&health_reading::decoder_util_percent>},
  // The latest XID, 0 before the first one, where the driver reports XID events.
  simple_metric{"DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.", metric_type::gauge,
    [](const device_info&, const device_state& d) -> reading {
      if (!d.health || !d.health->xid_known) return std::nullopt;
      return static_cast<double>(d.health->last_xid.value_or(0)); }},
  // Not in dcgm-exporter's default file: DCGM's field 112, the bitmask of docs/nvml-notes.md §7.
  simple_metric{"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "Current clock throttle reasons (bitmask of DCGM_CLOCKS_THROTTLE_REASON_*)", metric_type::gauge,
    [](const device_info&, const device_state& d) -> reading {
      if (!d.health || !d.health->throttle) return std::nullopt;
      return static_cast<double>(d.health->throttle->raw); }},
  // In dcgm-exporter's default file, commented out there.
  simple_metric{"DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "Total number of NVLink flow-control CRC errors.", metric_type::counter,
    h<&health_reading::nvlink_crc_flit_errors>},
  simple_metric{"DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "Total number of NVLink data CRC errors.", metric_type::counter,
    h<&health_reading::nvlink_crc_data_errors>},
  simple_metric{"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "Total number of NVLink retries.", metric_type::counter,
    h<&health_reading::nvlink_replay_errors>},
  simple_metric{"DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "Total number of NVLink recovery errors.", metric_type::counter,
    h<&health_reading::nvlink_recovery_errors>},
  simple_metric{"DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", metric_type::gauge,
    [](const device_info& i, const device_state& d) -> reading {
      const reading free = kSimple[13].get(i, d);
      return free ? reading(*free / 1048576.0) : std::nullopt; }},
  simple_metric{"DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", metric_type::gauge,
    h<&health_reading::memory_used_bytes>, 1.0 / 1048576.0},
  simple_metric{"DCGM_FI_DEV_FB_RESERVED", "Framebuffer memory reserved (in MiB).", metric_type::gauge,
    h<&health_reading::memory_reserved_bytes>, 1.0 / 1048576.0},
  simple_metric{"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "Number of remapped rows for uncorrectable errors", metric_type::counter,
    h<&health_reading::remapped_rows_uncorrected>},
  simple_metric{"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "Number of remapped rows for correctable errors", metric_type::counter,
    h<&health_reading::remapped_rows_corrected>},
  simple_metric{"DCGM_FI_DEV_ROW_REMAP_FAILURE", "Whether remapping of rows has failed", metric_type::gauge, h<&health_reading::remap_failure>},
  simple_metric{"DCGM_FI_PROF_SM_ACTIVE", "The ratio of cycles an SM has at least 1 warp assigned.", metric_type::gauge,
    h<&health_reading::sm_activity_percent>, 0.01},
  simple_metric{"DCGM_FI_PROF_SM_OCCUPANCY", "The ratio of number of warps resident on an SM.", metric_type::gauge,
    h<&health_reading::sm_occupancy_percent>, 0.01},
  simple_metric{"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "Ratio of cycles the tensor (HMMA) pipe is active.", metric_type::gauge,
    h<&health_reading::tensor_activity_percent>, 0.01},
  simple_metric{"DCGM_FI_PROF_DRAM_ACTIVE", "Ratio of cycles the device memory interface is active sending or receiving data.", metric_type::gauge,
    h<&health_reading::dram_bandwidth_percent>, 0.01},
  simple_metric{"DCGM_FI_PROF_PCIE_TX_BYTES", "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in bytes per second.", metric_type::gauge,
    h<&health_reading::pcie_tx_bytes_per_s>},
  simple_metric{"DCGM_FI_PROF_PCIE_RX_BYTES", "The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes per second.", metric_type::gauge,
    h<&health_reading::pcie_rx_bytes_per_s>},
};
// clang-format on
static_assert(kSimple[13].name == "joules_gpu_memory_free_bytes");
// Where a family is in its table, found by name: the tables grow.
template <std::size_t N>
constexpr std::size_t index_of(const std::array<simple_metric, N>& table, std::string_view name) {
  for (std::size_t i = 0; i < N; ++i) {
    if (table[i].name == name) return i;
  }
  return N;
}
constexpr std::size_t kDcgmFbFree = index_of(kDcgm, "DCGM_FI_DEV_FB_FREE");
constexpr std::size_t kDcgmFbUsed = index_of(kDcgm, "DCGM_FI_DEV_FB_USED");
static_assert(kDcgm[kDcgmFbFree].name == "DCGM_FI_DEV_FB_FREE");
static_assert(kDcgm[kDcgmFbUsed].name == "DCGM_FI_DEV_FB_USED");
constexpr std::size_t kDcgmSmActive = index_of(kDcgm, "DCGM_FI_PROF_SM_ACTIVE");
constexpr std::size_t kDcgmSmOccupancy = index_of(kDcgm, "DCGM_FI_PROF_SM_OCCUPANCY");
constexpr std::size_t kDcgmTensorActive = index_of(kDcgm, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE");
constexpr std::size_t kDcgmDramActive = index_of(kDcgm, "DCGM_FI_PROF_DRAM_ACTIVE");
static_assert(kDcgmSmActive < kDcgm.size() && kDcgmSmOccupancy < kDcgm.size() &&
              kDcgmTensorActive < kDcgm.size() && kDcgmDramActive < kDcgm.size());
// dcgm-exporter writes GPU_I_PROFILE and GPU_I_ID after its first five labels (gpu, UUID,
// pci_bus_id, device, modelName; docs/nvml-notes.md §10.2).
constexpr std::size_t kDcgmMigLabelsAt = 5;

// Clock event reasons, as clock_events::active() names them.
constexpr std::array<std::string_view, 9> kThrottleReasons = {
    "power_cap",  "hw_slowdown",         "hw_thermal",    "sw_thermal", "power_brake",
    "sync_boost", "applications_clocks", "display_clock", "idle"};

bool throttle_active(const clock_events& e, std::size_t reason) {
  const std::array<bool, kThrottleReasons.size()> on = {
      e.sw_power_cap, e.hw_slowdown,         e.hw_thermal,    e.sw_thermal, e.hw_power_brake,
      e.sync_boost,   e.applications_clocks, e.display_clock, e.gpu_idle};
  return on[reason];
}

}  // namespace

label_set gpu_labels_of(const device_info& d) {
  label_set l{{"gpu", std::to_string(d.index)}, {"uuid", d.key()}, {"model", d.name}};
  // The vendor tells a node's NVIDIA 0 from its AMD 0 (their UUIDs do too).
  if (!d.vendor.empty()) l.add("vendor", d.vendor);
  return l;
}

namespace {

// The driver of a GPU's vendor: a node of several vendors has one library (and driver) each.
std::string driver_of(const backend_meta& meta, std::string_view vendor) {
  if (meta.parts.empty()) return meta.driver_version;
  for (const auto& p : meta.parts) {
    const bool amd = p.backend == "amdsmi" || p.backend == "rocm_smi";
    if ((vendor == "nvidia" && (p.backend == "nvml" || p.backend == "sim")) ||
        (vendor == "amd" && amd) ||
        (vendor == "intel" && (p.backend == "levelzero" || p.backend == "hlml")))
      return p.driver_version;
  }
  return {};
}

label_set user_part(const label_set& base) {
  label_set out;
  for (const auto& l : base.labels()) {
    if (l.name != "hostname") out.add(l.name, l.value);
  }
  return out;
}

label_set joined(label_set a, const label_set& b) {
  for (const auto& l : b.labels())
    a.add(l.name, l.value);
  return a;
}

}  // namespace

gpu_metrics::gpu_metrics(exposition& e, std::vector<device_info> devices, const label_set& base,
                         const backend_meta& meta, bool dcgm_compat)
    : devices_(std::move(devices)) {
  info_ = &e.add_family("joules_gpu_info",
                        "The GPU's identity, as labels: PCI bus id, architecture, driver version.",
                        metric_type::info);
  lost_ = &e.add_family("joules_gpu_lost",
                        "1 when the GPU stopped answering (fell off the bus); its readings stop.",
                        metric_type::gauge);
  for (const auto& m : kSimple)
    families_.push_back(&e.add_family(m.name, m.help, m.type));
  throttle_ = &e.add_family(
      "joules_gpu_throttle_reason_active",
      "1 while the clock event (throttle) reason named by `reason` holds the clocks down.",
      metric_type::gauge);
  ecc_ = &e.add_family("joules_gpu_ecc_errors_total",
                       "ECC errors by type (corrected, uncorrected) and scope (volatile: since "
                       "the driver loaded; aggregate: over the GPU's life).",
                       metric_type::counter);
  xid_ = &e.add_family("joules_gpu_xid_errors_total",
                       "XID errors the driver reported since joules started watching the GPU, by "
                       "XID number (docs/xid.md).",
                       metric_type::counter);
  nvlink_errors_ = &e.add_family(
      "joules_gpu_nvlink_errors_total",
      "NVLink errors over all links since the driver loaded, by type (crc_flit, crc_data, "
      "replay, recovery).",
      metric_type::counter);
  nvlink_link_errors_ =
      &e.add_family("joules_gpu_nvlink_link_errors_total",
                    "NVLink errors of the link named by `link` since the driver loaded, by type "
                    "(crc_flit, crc_data, replay, recovery); written once the GPU has errors.",
                    metric_type::counter);
  nvlink_up_ = &e.add_family("joules_gpu_nvlink_link_up",
                             "1 while the NVLink named by `link` is up, 0 while it is down.",
                             metric_type::gauge);
  retired_ = &e.add_family("joules_gpu_retired_pages_total",
                           "Memory pages retired, by cause (single_bit, double_bit).",
                           metric_type::counter);
  remapped_ = &e.add_family("joules_gpu_remapped_rows_total",
                            "Memory rows remapped, by the errors that caused it (correctable, "
                            "uncorrectable).",
                            metric_type::counter);
  cpu_power_ = &e.add_family("joules_cpu_power_watts", "Power of a CPU package (RAPL), in watts.",
                             metric_type::gauge);
  cpu_energy_ =
      &e.add_family("joules_cpu_energy_joules_total",
                    "Energy of a CPU package (RAPL) since joules started reading it, in joules.",
                    metric_type::counter);
  dram_power_ = &e.add_family("joules_dram_power_watts",
                              "Power of a package's DRAM (RAPL), in watts.", metric_type::gauge);
  dram_energy_ =
      &e.add_family("joules_dram_energy_joules_total",
                    "Energy of a package's DRAM (RAPL) since joules started reading it, in joules.",
                    metric_type::counter);
  if (dcgm_compat) {
    for (const auto& m : kDcgm)
      dcgm_.push_back(&e.add_family(m.name, m.help, m.type, naming::compat));
  }
  dcgm_mig_families dcgm_mig;
  if (dcgm_compat) {
    dcgm_mig = {dcgm_[kDcgmFbUsed],      dcgm_[kDcgmFbFree],       dcgm_[kDcgmSmActive],
                dcgm_[kDcgmSmOccupancy], dcgm_[kDcgmTensorActive], dcgm_[kDcgmDramActive]};
  }
  mig_.emplace(e, dcgm_mig);

  pod_info_ = &e.add_family("joules_gpu_pod_info",
                            "A container that holds the GPU or one of its MIG devices "
                            "(device_id), from the kubelet's pod-resources API (--kubernetes), "
                            "as labels: pod, namespace, container.",
                            metric_type::info);
  base_ = base;
  user_ = user_part(base);
  host_ = std::string(base.find("hostname").value_or(""));
  meta_ = meta;
  dcgm_compat_ = dcgm_compat;
  for (const auto& d : devices_)
    gpus_.push_back(make_labels(d, nullptr));
  owned_.resize(devices_.size());
}

gpu_metrics::gpu_labels gpu_metrics::make_labels(const device_info& d,
                                                 const kubelet::pod_ref* owner) const {
  gpu_labels g;
  if (d.kind != device_kind::gpu) {
    // A RAPL domain: its key (e.g. intel-rapl:0) and its name (package-0, dram).
    g.labels = joined(label_set{{"domain", d.key()}, {"model", d.name}}, base_);
    return g;
  }
  label_set own = gpu_labels_of(d);
  if (owner != nullptr) {
    own.add("pod", owner->pod)
        .add("namespace", owner->pod_namespace)
        .add("container", owner->container);
  }
  g.labels = joined(std::move(own), base_);
  g.info = g.labels.with("pci_bus_id", d.pci_bus_id)
               .with("architecture", d.architecture)
               .with("driver_version", driver_of(meta_, d.vendor));
  for (const auto reason : kThrottleReasons)
    g.throttle.push_back(g.labels.with("reason", reason));
  for (const auto* type : {"corrected", "uncorrected"}) {
    for (const auto* scope : {"volatile", "aggregate"})
      g.ecc.push_back(g.labels.with("type", type).with("scope", scope));
  }
  for (const auto* cause : {"single_bit", "double_bit"})
    g.retired.push_back(g.labels.with("cause", cause));
  for (const auto* type : {"correctable", "uncorrectable"})
    g.remapped.push_back(g.labels.with("type", type));
  // dcgm-exporter's names are NVIDIA's: other vendors' GPUs have joules' series only.
  if (dcgm_compat_ && is_nvidia(d)) {
    // dcgm-exporter's line template (docs/nvml-notes.md §10.2), then the user's labels.  The host
    // is `hostname` since dcgm-exporter d5e5f51 and was `Hostname` before: both are written, so
    // that dashboards for either version select on it.  Its pod labels have the same names as
    // joules' (docs/kubernetes.md).
    label_set l{{"gpu", std::to_string(d.index)},
                {"UUID", d.key()},
                {"pci_bus_id", d.pci_bus_id},
                {"device", fmt::format("nvidia{}", d.index)},
                {"modelName", d.name},
                {"hostname", host_},
                {"Hostname", host_},
                {"DCGM_FI_DRIVER_VERSION", meta_.driver_version}};
    if (owner != nullptr) {
      l.add("pod", owner->pod)
          .add("namespace", owner->pod_namespace)
          .add("container", owner->container);
    }
    g.dcgm = joined(std::move(l), user_);
  }
  return g;
}

const gpu_metrics::gpu_labels& gpu_metrics::owned_labels(std::size_t k,
                                                         const kubelet::pod_ref& owner) {
  auto& slot = owned_[k];
  if (!slot || slot->first != owner) slot.emplace(owner, make_labels(devices_[k], &owner));
  return slot->second;
}

void gpu_metrics::fill_pods(const device_info& info, const gpu_labels& g, const health_reading* h,
                            const kubelet::device_pods& pods) {
  const auto add = [&](std::string_view id, const label_set& labels) {
    for (const auto& o : pods.owners(id)) {
      pod_info_->add_info(labels.with("device_id", id)
                              .with("pod", o.pod)
                              .with("namespace", o.pod_namespace)
                              .with("container", o.container));
    }
  };
  add(info.key(), g.labels);
  if (h == nullptr || !h->mig_enabled || !*h->mig_enabled) return;
  std::vector<std::string_view> seen;
  for (const auto& m : h->mig_instances) {
    if (m.uuid.empty() || std::find(seen.begin(), seen.end(), m.uuid) != seen.end()) continue;
    seen.push_back(m.uuid);
    add(m.uuid, mig_labels_of(g.labels, m));
  }
}

void gpu_metrics::fill(const sampler_snapshot& snap, const kubelet::device_pods* pods) {
  const std::size_t n = std::min(devices_.size(), snap.devices.size());
  for (std::size_t k = 0; k < n; ++k) {
    const device_info& info = devices_[k];
    const device_state& d = snap.devices[k];
    const std::vector<kubelet::pod_ref>* owners =
        pods != nullptr && info.kind == device_kind::gpu ? &pods->owners(info.key()) : nullptr;
    // One container holding the whole GPU: its series carry the pod; several share its energy.
    const gpu_labels& g =
        owners != nullptr && owners->size() == 1 ? owned_labels(k, owners->front()) : gpus_[k];
    if (info.kind != device_kind::gpu) {
      if (d.lost) continue;
      const bool cpu = info.kind == device_kind::cpu;
      (cpu ? cpu_power_ : dram_power_)->add_if_known(g.labels, d.power_w);
      (cpu ? cpu_energy_ : dram_energy_)->add_if_known(g.labels, d.energy_j);
      continue;
    }
    info_->add_info(g.info);
    lost_->add(g.labels, d.lost ? 1.0 : 0.0);
    if (pods != nullptr) fill_pods(info, gpus_[k], d.health ? &*d.health : nullptr, *pods);
    if (d.lost) continue;  // the last readings of a lost GPU would pass for live ones
    for (std::size_t m = 0; m < kSimple.size(); ++m) {
      const reading v = kSimple[m].get(info, d);
      if (v) families_[m]->add(g.labels, *v * kSimple[m].scale);
    }
    if (d.health) {
      const health_reading& hr = *d.health;
      if (hr.throttle) {
        for (std::size_t r = 0; r < kThrottleReasons.size(); ++r)
          throttle_->add(g.throttle[r], throttle_active(*hr.throttle, r) ? 1.0 : 0.0);
      }
      const std::array<const std::optional<std::uint64_t>*, 4> ecc = {
          &hr.ecc_corrected_volatile, &hr.ecc_corrected_aggregate, &hr.ecc_uncorrected_volatile,
          &hr.ecc_uncorrected_aggregate};
      for (std::size_t i = 0; i < ecc.size(); ++i)
        ecc_->add_if_known(g.ecc[i], known(*ecc[i]));
      for (const xid_count& x : hr.xid_counts)
        xid_->add(g.labels.with("xid", std::to_string(x.xid)), static_cast<double>(x.count));
      const std::array<std::pair<const char*, const std::optional<std::uint64_t>*>, 4> nvlink = {
          {{"crc_flit", &hr.nvlink_crc_flit_errors},
           {"crc_data", &hr.nvlink_crc_data_errors},
           {"replay", &hr.nvlink_replay_errors},
           {"recovery", &hr.nvlink_recovery_errors}}};
      for (const auto& [type, count] : nvlink)
        nvlink_errors_->add_if_known(g.labels.with("type", type), known(*count));
      for (const nvlink_state& l : hr.nvlink_links) {
        const label_set link = g.labels.with("link", std::to_string(l.link));
        nvlink_up_->add(link, l.active ? 1.0 : 0.0);
        const std::array<std::pair<const char*, const std::optional<std::uint64_t>*>, 4> errors = {
            {{"crc_flit", &l.crc_flit_errors},
             {"crc_data", &l.crc_data_errors},
             {"replay", &l.replay_errors},
             {"recovery", &l.recovery_errors}}};
        for (const auto& [type, count] : errors)
          nvlink_link_errors_->add_if_known(link.with("type", type), known(*count));
      }
      retired_->add_if_known(g.retired[0], known(hr.retired_pages_single_bit));
      retired_->add_if_known(g.retired[1], known(hr.retired_pages_double_bit));
      remapped_->add_if_known(g.remapped[0], known(hr.remapped_rows_corrected));
      remapped_->add_if_known(g.remapped[1], known(hr.remapped_rows_uncorrected));
      // A MIG device's pod labels are its own holder's, on the GPU's labels without any.
      mig_->fill(hr, gpus_[k].labels, dcgm_.empty() ? label_set{} : gpus_[k].dcgm, kDcgmMigLabelsAt,
                 pods);
    }
    if (!dcgm_.empty() && !g.dcgm.labels().empty()) fill_dcgm(info, d, g.dcgm);
  }
}

void gpu_metrics::fill_dcgm(const device_info& info, const device_state& d,
                            const label_set& labels) {
  for (std::size_t m = 0; m < kDcgm.size(); ++m) {
    const reading v = kDcgm[m].get(info, d);
    if (v) dcgm_[m]->add(labels, *v * kDcgm[m].scale);
  }
}

}  // namespace joules::exporter
