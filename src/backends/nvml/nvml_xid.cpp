#include "backends/nvml/nvml_xid.hpp"

#include <algorithm>
#include <limits>

namespace joules::nvml {

xid_watch::xid_watch(const entry_points& fn, nvmlDevice_t device) : fn_(fn), device_(device) {}

xid_watch::~xid_watch() {
  if (set_ != nullptr && fn_.nvmlEventSetFree != nullptr) fn_.nvmlEventSetFree(set_);
}

void xid_watch::open() {
  tried_ = true;
  if (fn_.nvmlEventSetCreate == nullptr || fn_.nvmlDeviceRegisterEvents == nullptr ||
      fn_.nvmlEventSetWait_v2 == nullptr || fn_.nvmlEventSetFree == nullptr) {
    return;
  }
  // A device that says it cannot report XIDs is not registered (the registration would fail).
  if (fn_.nvmlDeviceGetSupportedEventTypes != nullptr) {
    unsigned long long types = 0;
    if (fn_.nvmlDeviceGetSupportedEventTypes(device_, &types) != kSuccess ||
        (types & kEventTypeXidCriticalError) == 0) {
      return;
    }
  }
  nvmlEventSet_t set = nullptr;
  if (fn_.nvmlEventSetCreate(&set) != kSuccess || set == nullptr) return;
  if (fn_.nvmlDeviceRegisterEvents(device_, kEventTypeXidCriticalError, set) != kSuccess) {
    fn_.nvmlEventSetFree(set);
    return;
  }
  set_ = set;
}

void xid_watch::count(unsigned xid) {
  auto it = std::lower_bound(counts_.begin(), counts_.end(), xid,
                             [](const xid_count& c, unsigned x) { return c.xid < x; });
  if (it == counts_.end() || it->xid != xid) it = counts_.insert(it, xid_count{xid, 0});
  ++it->count;
  last_ = xid;
}

void xid_watch::read(health_reading& h) {
  if (!tried_) open();
  if (set_ == nullptr) return;
  for (int i = 0; i < kMaxPerRead; ++i) {
    nvmlEventData_t e{};
    const nvmlReturn_t rc = fn_.nvmlEventSetWait_v2(set_, &e, 0);
    if (rc == kErrorTimeout) break;  // nothing (more) queued
    if (rc != kSuccess) {
      if (rc == kErrorGpuIsLost || rc == kErrorNotSupported || rc == kErrorFunctionNotFound) {
        fn_.nvmlEventSetFree(set_);
        set_ = nullptr;
        return;
      }
      break;  // this once: the counts so far stand
    }
    // Events of another type, or from another device of the set, are not this GPU's XIDs.
    if ((e.eventType & kEventTypeXidCriticalError) == 0) continue;
    if (e.device != nullptr && e.device != device_) continue;
    // The driver's number, from outside: kept only when it fits the table's range.
    if (e.eventData > std::numeric_limits<unsigned>::max()) continue;
    count(static_cast<unsigned>(e.eventData));
  }
  h.xid_known = true;
  h.xid_counts = counts_;
  h.last_xid = last_;
}

}  // namespace joules::nvml
