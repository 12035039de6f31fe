// Events: the XID errors of a device's `xids` (README "XID errors"), delivered as NVML's event
// sets do: to a set registered for nvmlEventTypeXidCriticalError, each XID that happened after
// the registration, once, oldest first.

#include <algorithm>
#include <chrono>
#include <mutex>
#include <new>
#include <set>
#include <vector>

#include "api_util.hpp"
#include "nvml_exports.hpp"

namespace joules::nvml {
namespace {

using fake_nvml::api_call;
using fake_nvml::device_call;
using fake_nvml::fn;

// What nvmlEventSet_t points at.  The sets alive are listed (live_sets), so that the calls refuse
// pointers that are not ours or a set already freed without reading through them.
struct xid_event_set {
  struct registration {
    const fake_nvml::device* gpu = nullptr;
    nvmlDevice_t handle = nullptr;
    std::size_t next = 0;  // the first of gpu->xids not yet delivered
  };
  std::mutex lock;
  std::vector<registration> devices;
};

struct live_sets {
  std::mutex lock;
  std::set<const void*> sets;
};

live_sets& live() {
  static live_sets* l = new live_sets();  // never destroyed: calls may come during exit
  return *l;
}

xid_event_set* xid_set_of(nvmlEventSet_t s) {
  live_sets& l = live();
  const std::lock_guard<std::mutex> hold(l.lock);
  return l.sets.count(s) != 0 ? reinterpret_cast<xid_event_set*>(s) : nullptr;
}

// Takes the oldest XID due at scenario time t from any device of the set.
bool take_xid(xid_event_set& set, double t, nvmlEventData_t& out) {
  xid_event_set::registration* best = nullptr;
  for (auto& r : set.devices) {
    if (r.next >= r.gpu->xids.size() || r.gpu->xids[r.next].at_s > t) continue;
    if (best == nullptr || r.gpu->xids[r.next].at_s < best->gpu->xids[best->next].at_s) best = &r;
  }
  if (best == nullptr) return false;
  out = nvmlEventData_t{};
  out.device = best->handle;
  out.eventType = kEventTypeXidCriticalError;
  out.eventData = best->gpu->xids[best->next].xid;
  out.gpuInstanceId = 0xFFFFFFFFU;  // the whole GPU, not one MIG instance
  out.computeInstanceId = 0xFFFFFFFFU;
  ++best->next;
  return true;
}

}  // namespace

extern "C" nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  const api_call call(fn::nvmlEventSetCreate);
  if (!call) return call.status();
  if (set == nullptr) return kErrorInvalidArgument;
  auto* s = new (std::nothrow) xid_event_set();
  if (s == nullptr) return kErrorMemory;
  *set = reinterpret_cast<nvmlEventSet_t>(s);
  live_sets& l = live();
  const std::lock_guard<std::mutex> hold(l.lock);
  l.sets.insert(*set);
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device,
                                                         unsigned long long* eventTypes) {
  const device_call call(fn::nvmlDeviceGetSupportedEventTypes, device);
  if (!call) return call.status();
  if (eventTypes == nullptr) return kErrorInvalidArgument;
  *eventTypes = call.gpu().xid_events ? kEventTypeXidCriticalError : 0;
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
                                                 nvmlEventSet_t set) {
  const device_call call(fn::nvmlDeviceRegisterEvents, device);
  if (!call) return call.status();
  xid_event_set* s = xid_set_of(set);
  if (s == nullptr) return kErrorInvalidArgument;
  // A type the device cannot report fails the whole registration, as NVML's does.
  const unsigned long long supported = call.gpu().xid_events ? kEventTypeXidCriticalError : 0;
  if ((eventTypes & ~supported) != 0 || eventTypes == 0) return kErrorNotSupported;
  const auto& xids = call.gpu().xids;
  const double t = call.t();
  const auto first = std::upper_bound(xids.begin(), xids.end(), t,
                                      [](double v, const auto& x) { return v < x.at_s; });
  const std::lock_guard<std::mutex> hold(s->lock);
  s->devices.push_back({&call.gpu(), device, static_cast<std::size_t>(first - xids.begin())});
  return kSuccess;
}

extern "C" nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                            unsigned int timeoutms) {
  const api_call call(fn::nvmlEventSetWait_v2);
  if (!call) return call.status();
  xid_event_set* s = xid_set_of(set);
  if (s == nullptr || data == nullptr) return kErrorInvalidArgument;
  // The timeout is real time: scenario time may stand still (FAKE_NVML_CLOCK_FILE).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutms);
  for (;;) {
    const double t = fake_nvml::now_s();
    {
      const std::lock_guard<std::mutex> hold(s->lock);
      for (const auto& r : s->devices) {
        if (r.gpu->faults.lost(t)) return kErrorGpuIsLost;
      }
      if (take_xid(*s, t, *data)) return kSuccess;
    }
    if (std::chrono::steady_clock::now() >= deadline) return kErrorTimeout;
    fake_nvml::sleep_us(1000);
  }
}

extern "C" nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  const api_call call(fn::nvmlEventSetFree);
  if (!call) return call.status();
  live_sets& l = live();
  {
    const std::lock_guard<std::mutex> hold(l.lock);
    if (l.sets.erase(set) == 0) return kErrorInvalidArgument;
  }
  delete reinterpret_cast<xid_event_set*>(set);
  return kSuccess;
}

}  // namespace joules::nvml
