#include "backends/nvml/nvml_gpm.hpp"

#include <iterator>
#include <span>

#include "backends/nvml/nvml_decode.hpp"

namespace joules::nvml {
namespace {

// "The interval between two nvmlGpmSampleGet() calls should be greater than 100ms" (nvml.h:13907).
constexpr auto kMinGap = std::chrono::milliseconds(100);

}  // namespace

gpm_reader::~gpm_reader() {
  if (fn_.nvmlGpmSampleFree == nullptr) return;
  for (nvmlGpmSample_t s : samples_) {
    if (s != nullptr) fn_.nvmlGpmSampleFree(s);
  }
}

void gpm_reader::probe() {
  supported_ = false;
  const bool present = fn_.nvmlGpmQueryDeviceSupport != nullptr &&
                       fn_.nvmlGpmSampleAlloc != nullptr && fn_.nvmlGpmSampleFree != nullptr &&
                       fn_.nvmlGpmSampleGet != nullptr && fn_.nvmlGpmMetricsGet != nullptr &&
                       (!gpu_instance_ || fn_.nvmlGpmMigSampleGet != nullptr);
  if (!present) return;
  nvmlGpmSupport_t support{};
  support.version = kGpmSupportVersion;  // a plain 1: GPM structs are not size-versioned
  if (fn_.nvmlGpmQueryDeviceSupport(device_, &support) != kSuccess ||
      support.isSupportedDevice == 0) {
    return;
  }
  if (fn_.nvmlGpmSampleAlloc(&samples_[0]) == kSuccess &&
      fn_.nvmlGpmSampleAlloc(&samples_[1]) == kSuccess) {
    supported_ = true;
    request_ = std::make_unique<nvmlGpmMetricsGet_t>();
  }
}

void gpm_reader::read(health_reading& h) {
  if (!supported_) probe();
  if (!*supported_) return;
  const mono_time now = steady::now();
  if (!taken_ || now - *taken_ >= kMinGap) {
    const std::size_t next = taken_ ? 1 - newest_ : newest_;
    const nvmlReturn_t got = gpu_instance_
                                 ? fn_.nvmlGpmMigSampleGet(device_, *gpu_instance_, samples_[next])
                                 : fn_.nvmlGpmSampleGet(device_, samples_[next]);
    if (got == kSuccess) {
      if (taken_) {
        nvmlGpmMetricsGet_t& req = *request_;
        constexpr auto n = static_cast<unsigned>(std::size(kGpmRequested));
        req.version = kGpmMetricsGetVersion;
        req.numMetrics = n;
        req.sample1 = samples_[newest_];
        req.sample2 = samples_[next];
        for (unsigned i = 0; i < n; ++i) {
          req.metrics[i] = nvmlGpmMetric_t{};
          req.metrics[i].metricId = kGpmRequested[i];
        }
        last_ = health_reading{};
        if (fn_.nvmlGpmMetricsGet(&req) == kSuccess) apply_gpm(std::span(req.metrics, n), last_);
      }
      newest_ = next;
      taken_ = now;
    }
  }
  h.sm_activity_percent = last_.sm_activity_percent;
  h.sm_occupancy_percent = last_.sm_occupancy_percent;
  h.tensor_activity_percent = last_.tensor_activity_percent;
  h.dram_bandwidth_percent = last_.dram_bandwidth_percent;
  h.gpm_pcie_tx_bytes_per_s = last_.gpm_pcie_tx_bytes_per_s;
  h.gpm_pcie_rx_bytes_per_s = last_.gpm_pcie_rx_bytes_per_s;
  h.nvlink_tx_bytes_per_s = last_.nvlink_tx_bytes_per_s;
  h.nvlink_rx_bytes_per_s = last_.nvlink_rx_bytes_per_s;
}

}  // namespace joules::nvml
