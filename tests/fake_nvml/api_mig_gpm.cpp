// MIG handles and GPM samples.  Power and energy stay whole-GPU quantities: MIG handles get
// NOT_SUPPORTED from those calls (device_call's default policy): on real MIG GPUs power is the
// whole GPU's (docs/nvml-notes.md §9.3).

#include <new>
#include <optional>

#include "api_util.hpp"
#include "nvml_exports.hpp"

namespace joules::nvml {
namespace {

using fake_nvml::api_call;
using fake_nvml::device_call;
using fake_nvml::fn;
using mig = fake_nvml::device_call::mig_policy;

// What nvmlGpmSample_t points at.  The magic number lets nvmlGpmSampleFree and
// nvmlGpmMetricsGet refuse pointers that are not ours.
struct gpm_sample {
  static constexpr unsigned int kMagic = 0x67706D31U;  // "gpm1"
  unsigned int magic = kMagic;
  const fake_nvml::device* gpu = nullptr;      // null until nvmlGpmSampleGet
  const fake_nvml::mig_device* mig = nullptr;  // a GPU instance's sample (nvmlGpmMigSampleGet)
  double t = 0.0;
};

// A GPU instance's metrics: those its scenario entry gives.
bool mig_metric_value(const fake_nvml::mig_device& m, unsigned int id, double& value) {
  const std::optional<double>* from = nullptr;
  switch (id) {
    case kGpmMetricSmUtil:
      from = &m.sm_util_percent;
      break;
    case kGpmMetricSmOccupancy:
      from = &m.sm_occupancy_percent;
      break;
    case kGpmMetricAnyTensorUtil:
      from = &m.tensor_util_percent;
      break;
    case kGpmMetricDramBwUtil:
      from = &m.dram_bw_util_percent;
      break;
    default:
      return false;
  }
  if (!*from) return false;
  value = **from;
  return true;
}

gpm_sample* sample_of(nvmlGpmSample_t s) {
  auto* sample = reinterpret_cast<gpm_sample*>(s);
  return sample != nullptr && sample->magic == gpm_sample::kMagic ? sample : nullptr;
}

bool gpm_supported(const fake_nvml::device& d) {
  return d.arch->rank >= fake_nvml::kRankHopper;
}

// Metric values from the device's health; ids per docs/nvml-notes.md §5.9.
bool metric_value(const fake_nvml::device_health& h, unsigned int id, double& value) {
  switch (id) {
    case 1:
      value = static_cast<double>(h.gpu_util_percent);
      return true;
    case kGpmMetricSmUtil:
      value = h.sm_util_percent;
      return true;
    case kGpmMetricSmOccupancy:
      value = h.sm_occupancy_percent;
      return true;
    case kGpmMetricAnyTensorUtil:
      value = h.tensor_util_percent;
      return true;
    case kGpmMetricDramBwUtil:
      value = h.dram_bw_util_percent;
      return true;
    case kGpmMetricPcieTxPerSec:
      value = h.pcie_tx_kib_s / 1024.0;
      return true;
    case kGpmMetricPcieRxPerSec:
      value = h.pcie_rx_kib_s / 1024.0;
      return true;
    case kGpmMetricNvlinkTotalRxPerSec:
      value = h.nvlink_rx_kib_s / 1024.0;
      return true;
    case kGpmMetricNvlinkTotalTxPerSec:
      value = h.nvlink_tx_kib_s / 1024.0;
      return true;
    default:
      return false;
  }
}

}  // namespace

extern "C" nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* currentMode,
                                             unsigned int* pendingMode) {
  const device_call call(fn::nvmlDeviceGetMigMode, device);
  if (!call) return call.status();
  if (currentMode == nullptr || pendingMode == nullptr) return kErrorInvalidArgument;
  if (!call.gpu().arch->mig_capable) return kErrorNotSupported;
  *currentMode = *pendingMode = call.gpu().mig_enabled ? kDeviceMigEnable : 0U;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count) {
  const device_call call(fn::nvmlDeviceGetMaxMigDeviceCount, device);
  if (!call) return call.status();
  if (count == nullptr) return kErrorInvalidArgument;
  *count = call.gpu().mig_max_count;  // 0 when MIG is unsupported or off
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                            nvmlDevice_t* migDevice) {
  const device_call call(fn::nvmlDeviceGetMigDeviceHandleByIndex, device);
  if (!call) return call.status();
  const fake_nvml::device& d = call.gpu();
  if (migDevice == nullptr || index >= d.mig_max_count) return kErrorInvalidArgument;
  if (index >= d.mig_count) return kErrorNotFound;  // an empty slot
  const fake_nvml::scenario& s = call.sc();
  *migDevice = s.handle_of(s.slots[s.devices.size() + d.mig_first + index]);
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice,
                                                                     nvmlDevice_t* device) {
  const device_call call(fn::nvmlDeviceGetDeviceHandleFromMigDeviceHandle, migDevice, mig::accept);
  if (!call) return call.status();
  if (device == nullptr || call.mig() == nullptr) return kErrorInvalidArgument;
  *device = call.sc().handle_of(call.sc().slots[call.gpu().index]);
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device,
                                                    unsigned int* isMigDevice) {
  const device_call call(fn::nvmlDeviceIsMigDeviceHandle, device, mig::accept);
  if (!call) return call.status();
  if (isMigDevice == nullptr) return kErrorInvalidArgument;
  *isMigDevice = call.mig() != nullptr ? 1U : 0U;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  const device_call call(fn::nvmlDeviceGetGpuInstanceId, device, mig::accept);
  if (!call) return call.status();
  if (id == nullptr) return kErrorInvalidArgument;
  if (call.mig() == nullptr) return kErrorNotSupported;
  *id = call.mig()->gpu_instance_id;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id) {
  const device_call call(fn::nvmlDeviceGetComputeInstanceId, device, mig::accept);
  if (!call) return call.status();
  if (id == nullptr) return kErrorInvalidArgument;
  if (call.mig() == nullptr) return kErrorNotSupported;
  *id = call.mig()->compute_instance_id;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device,
                                                  nvmlGpmSupport_t* gpmSupport) {
  const device_call call(fn::nvmlGpmQueryDeviceSupport, device, mig::accept);
  if (!call) return call.status();
  if (gpmSupport == nullptr) return kErrorInvalidArgument;
  if (gpmSupport->version != kGpmSupportVersion) return kErrorArgumentVersionMismatch;
  gpmSupport->isSupportedDevice = gpm_supported(call.gpu()) ? 1U : 0U;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* gpmSample) {
  const api_call call(fn::nvmlGpmSampleAlloc);
  if (!call) return call.status();
  if (gpmSample == nullptr) return kErrorInvalidArgument;
  auto* sample = new (std::nothrow) gpm_sample();
  if (sample == nullptr) return kErrorMemory;
  *gpmSample = reinterpret_cast<nvmlGpmSample_t>(sample);
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t gpmSample) {
  const api_call call(fn::nvmlGpmSampleFree);
  if (!call) return call.status();
  gpm_sample* sample = sample_of(gpmSample);
  if (sample == nullptr) return kErrorInvalidArgument;
  sample->magic = 0;
  delete sample;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t gpmSample) {
  const device_call call(fn::nvmlGpmSampleGet, device, mig::accept);
  if (!call) return call.status();
  gpm_sample* sample = sample_of(gpmSample);
  if (sample == nullptr) return kErrorInvalidArgument;
  if (!gpm_supported(call.gpu())) return kErrorNotSupported;
  sample->gpu = &call.gpu();
  sample->mig = nullptr;
  sample->t = call.t();
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t device, unsigned int gpuInstanceId,
                                            nvmlGpmSample_t gpmSample) {
  const device_call call(fn::nvmlGpmMigSampleGet, device);
  if (!call) return call.status();
  gpm_sample* sample = sample_of(gpmSample);
  if (sample == nullptr) return kErrorInvalidArgument;
  const fake_nvml::device& d = call.gpu();
  if (!gpm_supported(d)) return kErrorNotSupported;
  const fake_nvml::scenario& s = call.sc();
  for (std::size_t i = d.mig_first; i < d.mig_first + d.mig_count; ++i) {
    if (s.migs[i].gpu_instance_id != gpuInstanceId) continue;
    sample->gpu = &d;
    sample->mig = &s.migs[i];
    sample->t = call.t();
    return kSuccess;
  }
  return kErrorNotFound;
}

extern "C" nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* metricsGet) {
  const api_call call(fn::nvmlGpmMetricsGet);
  if (!call) return call.status();
  if (metricsGet == nullptr) return kErrorInvalidArgument;
  if (metricsGet->version != kGpmMetricsGetVersion) return kErrorArgumentVersionMismatch;
  const gpm_sample* first = sample_of(metricsGet->sample1);
  const gpm_sample* second = sample_of(metricsGet->sample2);
  if (first == nullptr || second == nullptr || first->gpu == nullptr || second->gpu != first->gpu ||
      second->mig != first->mig || metricsGet->numMetrics > kGpmMetricMax) {
    return kErrorInvalidArgument;
  }
  for (unsigned int i = 0; i < metricsGet->numMetrics; ++i) {
    nvmlGpmMetric_t& m = metricsGet->metrics[i];
    m.metricInfo = {nullptr, nullptr, nullptr};
    const bool known = second->mig != nullptr
                           ? mig_metric_value(*second->mig, m.metricId, m.value)
                           : metric_value(second->gpu->health_at(second->t), m.metricId, m.value);
    m.nvmlReturn = known ? kSuccess : kErrorNotSupported;
  }
  return kSuccess;
}

}  // namespace joules::nvml
