// Process lists, with NVML's sizing protocol and the _v3 stride that changed without a version
// bump (24 or 32 bytes, the scenario's process_struct_bytes; docs/nvml-notes.md §5.8).

#include <vector>

#include "api_util.hpp"
#include "nvml_exports.hpp"

namespace joules::nvml {
namespace {

using fake_nvml::device_call;
using fake_nvml::fn;
using mig = fake_nvml::device_call::mig_policy;

const std::vector<fake_nvml::process> kNoProcesses;

const std::vector<fake_nvml::process>& processes_of(const device_call& call, bool graphics) {
  if (call.mig() != nullptr) return graphics ? kNoProcesses : call.mig()->processes;
  return call.gpu().processes_at(call.t(), graphics);
}

void fill(nvmlProcessInfo_v1_t& out, const fake_nvml::process& p) {
  out = nvmlProcessInfo_v1_t{};
  out.pid = p.pid;
  out.usedGpuMemory = p.used_memory_bytes;
}

void fill(nvmlProcessInfo_v2_t& out, const fake_nvml::process& p) {
  out = nvmlProcessInfo_v2_t{};
  out.pid = p.pid;
  out.usedGpuMemory = p.used_memory_bytes;
  out.gpuInstanceId = p.gpu_instance_id;
  out.computeInstanceId = p.compute_instance_id;
}

void fill(nvmlProcessDetail_v1_t& out, const fake_nvml::process& p) {
  out = nvmlProcessDetail_v1_t{};
  out.pid = p.pid;
  out.usedGpuMemory = p.used_memory_bytes;
  out.gpuInstanceId = p.gpu_instance_id;
  out.computeInstanceId = p.compute_instance_id;
  out.usedGpuCcProtectedMemory = 0;
}

// Count 0 (or too small) with processes present: INSUFFICIENT_SIZE and the needed count.
template <class Info>
nvmlReturn_t write_list(const std::vector<fake_nvml::process>& list, unsigned int* count,
                        Info* infos) {
  if (count == nullptr) return kErrorInvalidArgument;
  const auto n = static_cast<unsigned int>(list.size());
  if (*count < n) {
    *count = n;
    return kErrorInsufficientSize;
  }
  if (n > 0 && infos == nullptr) return kErrorInvalidArgument;
  for (unsigned int i = 0; i < n; ++i)
    fill(infos[i], list[i]);
  *count = n;
  return kSuccess;
}

template <class Info>
nvmlReturn_t processes(fn f, nvmlDevice_t device, bool graphics, unsigned int* count, Info* infos) {
  const device_call call(f, device, mig::accept);
  if (!call) return call.status();
  return write_list(processes_of(call, graphics), count, infos);
}

// The _v3 names write whichever stride the imitated driver used.
nvmlReturn_t processes_v3(fn f, nvmlDevice_t device, bool graphics, unsigned int* count,
                          nvmlProcessInfo_v2_t* infos) {
  const device_call call(f, device, mig::accept);
  if (!call) return call.status();
  const auto& list = processes_of(call, graphics);
  if (call.sc().process_struct_bytes == 32) {
    // The caller's buffer really is an array of the 32-byte struct on such a driver.
    return write_list(list, count, reinterpret_cast<nvmlProcessDetail_v1_t*>(infos));
  }
  return write_list(list, count, infos);
}

}  // namespace

extern "C" nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
                                                             unsigned int* infoCount,
                                                             nvmlProcessInfo_v1_t* infos) {
  return processes(fn::nvmlDeviceGetComputeRunningProcesses, device, false, infoCount, infos);
}

extern "C" nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device,
                                                                unsigned int* infoCount,
                                                                nvmlProcessInfo_v2_t* infos) {
  return processes(fn::nvmlDeviceGetComputeRunningProcesses_v2, device, false, infoCount, infos);
}

extern "C" nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                unsigned int* infoCount,
                                                                nvmlProcessInfo_v2_t* infos) {
  return processes_v3(fn::nvmlDeviceGetComputeRunningProcesses_v3, device, false, infoCount, infos);
}

extern "C" nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t device,
                                                              unsigned int* infoCount,
                                                              nvmlProcessInfo_v1_t* infos) {
  return processes(fn::nvmlDeviceGetGraphicsRunningProcesses, device, true, infoCount, infos);
}

extern "C" nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device,
                                                                 unsigned int* infoCount,
                                                                 nvmlProcessInfo_v2_t* infos) {
  return processes(fn::nvmlDeviceGetGraphicsRunningProcesses_v2, device, true, infoCount, infos);
}

extern "C" nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device,
                                                                 unsigned int* infoCount,
                                                                 nvmlProcessInfo_v2_t* infos) {
  return processes_v3(fn::nvmlDeviceGetGraphicsRunningProcesses_v3, device, true, infoCount, infos);
}

// nvmlDeviceGetProcessUtilization: one sample per process that ran something (sm or memory
// utilisation above 0), stamped with the call's wall-clock time in µs, only when newer than
// lastSeenTimeStamp; NOT_FOUND when there is none (nvml.h:8488-8529, docs/nvml-notes.md §5.12).
extern "C" nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                                        nvmlProcessUtilizationSample_t* utilization,
                                                        unsigned int* processSamplesCount,
                                                        unsigned long long lastSeenTimeStamp) {
  const device_call call(fn::nvmlDeviceGetProcessUtilization, device);
  if (!call) return call.status();
  if (processSamplesCount == nullptr) return kErrorInvalidArgument;
  // "On MIG-enabled GPUs, querying process utilization is not currently supported."
  if (call.gpu().mig_enabled || !call.gpu().process_utilization) return kErrorNotSupported;
  const auto now_us = static_cast<unsigned long long>(fake_nvml::realtime_us());
  const auto& compute = call.gpu().processes_at(call.t(), false);
  const auto& graphics = call.gpu().processes_at(call.t(), true);
  // A pid in both lists is one process: its first entry counts.  No allocation: two passes.
  const std::vector<fake_nvml::process>* lists[] = {&compute, &graphics};
  auto first_entry = [&](std::size_t l, std::size_t i) {
    const unsigned int pid = (*lists[l])[i].pid;
    for (std::size_t m = 0; m <= l; ++m) {
      for (std::size_t j = 0; j < (m == l ? i : lists[m]->size()); ++j) {
        if ((*lists[m])[j].pid == pid) return false;
      }
    }
    return true;
  };
  auto for_each_busy = [&](auto&& visit) {
    for (std::size_t l = 0; l < 2; ++l) {
      for (std::size_t i = 0; i < lists[l]->size(); ++i) {
        const fake_nvml::process& p = (*lists[l])[i];
        if ((p.sm_util_percent > 0 || p.memory_util_percent > 0) && first_entry(l, i)) visit(p);
      }
    }
  };
  unsigned int n = 0;
  if (now_us > lastSeenTimeStamp) for_each_busy([&](const fake_nvml::process&) { ++n; });
  if (n == 0) return kErrorNotFound;
  if (utilization == nullptr || *processSamplesCount < n) {
    *processSamplesCount = n;
    return kErrorInsufficientSize;
  }
  unsigned int k = 0;
  for_each_busy([&](const fake_nvml::process& p) {
    utilization[k] = nvmlProcessUtilizationSample_t{};
    utilization[k].pid = p.pid;
    utilization[k].timeStamp = now_us;
    utilization[k].smUtil = p.sm_util_percent;
    utilization[k].memUtil = p.memory_util_percent;
    ++k;
  });
  *processSamplesCount = n;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetConfComputeMemSizeInfo(nvmlDevice_t device,
                                                            nvmlConfComputeMemSizeInfo_t* memInfo) {
  const device_call call(fn::nvmlDeviceGetConfComputeMemSizeInfo, device);
  if (!call) return call.status();
  if (memInfo == nullptr) return kErrorInvalidArgument;
  return kErrorNotSupported;  // no simulated GPU runs in confidential-computing mode
}

extern "C" nvmlReturn_t nvmlDeviceGetRunningProcessDetailList(nvmlDevice_t device,
                                                              nvmlProcessDetailList_v1_t* plist) {
  const device_call call(fn::nvmlDeviceGetRunningProcessDetailList, device, mig::accept);
  if (!call) return call.status();
  if (plist == nullptr) return kErrorInvalidArgument;
  if (plist->version != kProcessDetailListV1Version) return kErrorArgumentVersionMismatch;
  // Modes: 0 compute, 1 graphics, 2 MPS (none simulated).
  if (plist->mode > 2) return kErrorInvalidArgument;
  const auto& list = plist->mode == 2 ? kNoProcesses : processes_of(call, plist->mode == 1);
  return write_list(list, &plist->numProcArrayEntries, plist->procArray);
}

}  // namespace joules::nvml
