// Entry points for the library's lifetime, system queries, enumeration and identity.

#include <cstdio>

#include "api_util.hpp"
#include "nvml_exports.hpp"

namespace joules::nvml {
namespace {

using fake_nvml::api_call;
using fake_nvml::device_call;
using fake_nvml::fn;
using mig = fake_nvml::device_call::mig_policy;

nvmlReturn_t handle_by_index(fn f, unsigned int index, nvmlDevice_t* device) {
  const api_call call(f);
  if (!call) return call.status();
  const fake_nvml::scenario& s = call.sc();
  if (device == nullptr || index >= s.devices.size()) return kErrorInvalidArgument;
  const fake_nvml::device& d = s.devices[index];
  // nvmlDeviceGetCount counts this device; only opening it is refused (docs/nvml-notes.md §6).
  if (d.no_permission) return kErrorNoPermission;
  if (d.faults.lost(fake_nvml::now_s())) return kErrorGpuIsLost;
  *device = s.handle_of(s.slots[index]);
  return kSuccess;
}

nvmlReturn_t device_count(fn f, unsigned int* count) {
  const api_call call(f);
  if (!call) return call.status();
  if (count == nullptr) return kErrorInvalidArgument;
  *count = static_cast<unsigned int>(call.sc().devices.size());
  return kSuccess;
}

nvmlReturn_t pci_info(fn f, nvmlDevice_t device, nvmlPciInfo_t* pci) {
  const device_call call(f, device);
  if (!call) return call.status();
  if (pci == nullptr) return kErrorInvalidArgument;
  const fake_nvml::device& d = call.gpu();
  *pci = nvmlPciInfo_t{};
  std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.0",
                d.pci_domain & 0xFFFFU, d.pci_bus & 0xFFU, d.pci_device & 0xFFU);
  std::snprintf(pci->busId, sizeof pci->busId, "%s", d.pci_bus_id.c_str());
  pci->domain = d.pci_domain;
  pci->bus = d.pci_bus;
  pci->device = d.pci_device;
  pci->pciDeviceId = 0x233010DEU;  // H100 SXM5 (device 0x2330, vendor 0x10DE)
  pci->pciSubSystemId = 0x16C110DEU;
  return kSuccess;
}

// nvmlErrorString's texts, as the real library words them.
const char* error_text(nvmlReturn_t result) {
  switch (result) {
    case 0:
      return "Success";
    case 1:
      return "Uninitialized";
    case 2:
      return "Invalid Argument";
    case 3:
      return "Not Supported";
    case 4:
      return "Insufficient Permissions";
    case 5:
      return "Already Initialized";
    case 6:
      return "Not Found";
    case 7:
      return "Insufficient Size";
    case 8:
      return "Insufficient External Power";
    case 9:
      return "Driver Not Loaded";
    case 10:
      return "Timeout";
    case 11:
      return "Interrupt request issue";
    case 12:
      return "NVML Shared Library Not Found";
    case 13:
      return "Function Not Found";
    case 14:
      return "Corrupted infoROM";
    case 15:
      return "GPU is lost";
    case 16:
      return "GPU requires restart";
    case 17:
      return "The operating system has blocked the request";
    case 18:
      return "RM has detected an NVML/RM version mismatch";
    case 19:
      return "In use by another client";
    case 20:
      return "Insufficient Memory";
    case 21:
      return "No data";
    case 22:
      return "The requested vgpu operation is not available on target device, because "
             "ECC is enabled";
    case 23:
      return "Ran out of critical resources, other than memory";
    case 24:
      return "The requested frequency is not supported";
    case 25:
      return "The provided version is invalid/unsupported";
    case 26:
      return "The requested functionality has been deprecated";
    case 27:
      return "The system is not ready for the request";
    case 28:
      return "No GPUs were found";
    case 29:
      return "Resource not in correct state to perform requested operation";
    default:
      return "Unknown Error";
  }
}

}  // namespace

extern "C" nvmlReturn_t nvmlInit(void) {
  fake_nvml::count_call(fn::nvmlInit);
  return fake_nvml::init();
}

extern "C" nvmlReturn_t nvmlInit_v2(void) {
  fake_nvml::count_call(fn::nvmlInit_v2);
  return fake_nvml::init();
}

extern "C" nvmlReturn_t nvmlInitWithFlags(unsigned int /*flags*/) {
  // NO_GPUS only matters when there are no GPUs, which init accepts anyway; NO_ATTACH and
  // FORCE_INIT change nothing observable here.
  fake_nvml::count_call(fn::nvmlInitWithFlags);
  return fake_nvml::init();
}

extern "C" nvmlReturn_t nvmlShutdown(void) {
  fake_nvml::count_call(fn::nvmlShutdown);
  return fake_nvml::shutdown();
}

extern "C" const char* nvmlErrorString(nvmlReturn_t result) {
  fake_nvml::count_call(fn::nvmlErrorString);  // works without init, as NVML's does
  return error_text(result);
}

extern "C" nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  const api_call call(fn::nvmlSystemGetDriverVersion);
  if (!call) return call.status();
  return fake_nvml::copy_string(call.sc().driver_version, version, length);
}

extern "C" nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  const api_call call(fn::nvmlSystemGetNVMLVersion);
  if (!call) return call.status();
  return fake_nvml::copy_string(call.sc().nvml_version, version, length);
}

extern "C" nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* cudaDriverVersion) {
  const api_call call(fn::nvmlSystemGetCudaDriverVersion);
  if (!call) return call.status();
  if (cudaDriverVersion == nullptr) return kErrorInvalidArgument;
  *cudaDriverVersion = call.sc().cuda_driver_version;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* cudaDriverVersion) {
  const api_call call(fn::nvmlSystemGetCudaDriverVersion_v2);
  if (!call) return call.status();
  if (cudaDriverVersion == nullptr) return kErrorInvalidArgument;
  *cudaDriverVersion = call.sc().cuda_driver_version;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetCount(unsigned int* deviceCount) {
  return device_count(fn::nvmlDeviceGetCount, deviceCount);
}

extern "C" nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount) {
  return device_count(fn::nvmlDeviceGetCount_v2, deviceCount);
}

extern "C" nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  return handle_by_index(fn::nvmlDeviceGetHandleByIndex, index, device);
}

extern "C" nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  return handle_by_index(fn::nvmlDeviceGetHandleByIndex_v2, index, device);
}

extern "C" nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  const api_call call(fn::nvmlDeviceGetHandleByUUID);
  if (!call) return call.status();
  if (uuid == nullptr || device == nullptr) return kErrorInvalidArgument;
  const fake_nvml::scenario& s = call.sc();
  for (const fake_nvml::handle_slot& slot : s.slots) {
    const std::string& id = slot.mig != nullptr ? slot.mig->uuid : slot.gpu->uuid;
    if (id != uuid) continue;
    if (slot.gpu->no_permission) return kErrorNoPermission;
    if (slot.gpu->faults.lost(fake_nvml::now_s())) return kErrorGpuIsLost;
    *device = s.handle_of(slot);
    return kSuccess;
  }
  return kErrorNotFound;
}

extern "C" nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pciBusId,
                                                         nvmlDevice_t* device) {
  const api_call call(fn::nvmlDeviceGetHandleByPciBusId_v2);
  if (!call) return call.status();
  if (pciBusId == nullptr || device == nullptr) return kErrorInvalidArgument;
  // "domain:bus:device.function", or "bus:device.function" with domain 0.
  unsigned int domain = 0, bus = 0, dev = 0, function = 0;
  if (std::sscanf(pciBusId, "%x:%x:%x.%x", &domain, &bus, &dev, &function) != 4) {
    domain = 0;
    if (std::sscanf(pciBusId, "%x:%x.%x", &bus, &dev, &function) != 3) {
      return kErrorInvalidArgument;
    }
  }
  const fake_nvml::scenario& s = call.sc();
  for (const fake_nvml::device& d : s.devices) {
    if (d.pci_domain != domain || d.pci_bus != bus || d.pci_device != dev) continue;
    if (d.no_permission) return kErrorNoPermission;
    if (d.faults.lost(fake_nvml::now_s())) return kErrorGpuIsLost;
    *device = s.handle_of(s.slots[d.index]);
    return kSuccess;
  }
  return kErrorNotFound;
}

extern "C" nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  const device_call call(fn::nvmlDeviceGetIndex, device);
  if (!call) return call.status();
  if (index == nullptr) return kErrorInvalidArgument;
  *index = call.gpu().index;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  const device_call call(fn::nvmlDeviceGetName, device, mig::accept);
  if (!call) return call.status();
  return fake_nvml::copy_string(call.mig() != nullptr ? call.mig()->name : call.gpu().name, name,
                                length);
}

extern "C" nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  const device_call call(fn::nvmlDeviceGetUUID, device, mig::accept);
  if (!call) return call.status();
  return fake_nvml::copy_string(call.mig() != nullptr ? call.mig()->uuid : call.gpu().uuid, uuid,
                                length);
}

extern "C" nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char* serial,
                                            unsigned int length) {
  const device_call call(fn::nvmlDeviceGetSerial, device);
  if (!call) return call.status();
  return fake_nvml::copy_string(call.gpu().serial, serial, length);
}

extern "C" nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minorNumber) {
  const device_call call(fn::nvmlDeviceGetMinorNumber, device);
  if (!call) return call.status();
  if (minorNumber == nullptr) return kErrorInvalidArgument;
  *minorNumber = call.gpu().index;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return pci_info(fn::nvmlDeviceGetPciInfo, device, pci);
}

extern "C" nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return pci_info(fn::nvmlDeviceGetPciInfo_v2, device, pci);
}

extern "C" nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return pci_info(fn::nvmlDeviceGetPciInfo_v3, device, pci);
}

extern "C" nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device,
                                                  nvmlDeviceArchitecture_t* arch) {
  const device_call call(fn::nvmlDeviceGetArchitecture, device, mig::accept);
  if (!call) return call.status();
  if (arch == nullptr) return kErrorInvalidArgument;
  *arch = call.gpu().arch->nvml_code;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major,
                                                           int* minor) {
  const device_call call(fn::nvmlDeviceGetCudaComputeCapability, device, mig::accept);
  if (!call) return call.status();
  if (major == nullptr || minor == nullptr) return kErrorInvalidArgument;
  *major = call.gpu().cc_major;
  *minor = call.gpu().cc_minor;
  return kSuccess;
}

}  // namespace joules::nvml
