#include "backends/nvml/nvml_mig.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace joules::nvml {
namespace {

// A driver's slot count is not trusted past this.
constexpr unsigned int kMaxMigSlots = 64;

}  // namespace

std::string_view mig_profile_of(std::string_view name) {
  constexpr std::string_view kMarker = " MIG ";
  const auto at = name.rfind(kMarker);
  if (at == std::string_view::npos) return {};
  std::string_view rest = name.substr(at + kMarker.size());
  const auto space = rest.find(' ');
  return space == std::string_view::npos ? rest : rest.substr(0, space);
}

void mig_reader::read(health_reading& h, bool slow) {
  if (off_ || device_ == nullptr) return;
  if (!read_once_ || slow) read_layout();
  if (off_) return;
  h.mig_enabled = enabled_;
  read_gpm();
  h.mig_instances.clear();
  h.mig_instances.reserve(instances_.size());
  for (instance& m : instances_) {
    read_memory(m);
    h.mig_instances.push_back(m.info);
  }
}

void mig_reader::read_gpm() {
  // Readers of GPU instances gone from the layout go with them.
  std::erase_if(gpm_, [this](const auto& entry) {
    return std::none_of(instances_.begin(), instances_.end(),
                        [&](const instance& m) { return m.info.gpu_instance == entry.first; });
  });
  std::map<unsigned, health_reading> read;
  for (instance& m : instances_) {
    const unsigned gi = m.info.gpu_instance;
    auto it = read.find(gi);
    if (it == read.end()) {
      auto& reader = gpm_[gi];
      if (!reader) reader = std::make_unique<gpm_reader>(fn_, device_, gi);
      it = read.emplace(gi, health_reading{}).first;
      reader->read(it->second);
    }
    m.info.sm_activity_percent = it->second.sm_activity_percent;
    m.info.sm_occupancy_percent = it->second.sm_occupancy_percent;
    m.info.tensor_activity_percent = it->second.tensor_activity_percent;
    m.info.dram_bandwidth_percent = it->second.dram_bandwidth_percent;
  }
}

void mig_reader::read_layout() {
  read_once_ = true;
  instances_.clear();
  enabled_ = false;
  if (fn_.nvmlDeviceGetMigMode == nullptr) {
    off_ = true;
    return;
  }
  unsigned int current = 0;
  unsigned int pending = 0;
  const nvmlReturn_t rc = fn_.nvmlDeviceGetMigMode(device_, &current, &pending);
  if (rc != kSuccess) {
    // NOT_SUPPORTED: a GPU without MIG (before Ampere), for good; other failures: this time.
    if (rc == kErrorNotSupported || rc == kErrorFunctionNotFound) off_ = true;
    return;
  }
  enabled_ = current == kDeviceMigEnable;
  if (!enabled_ || fn_.nvmlDeviceGetMaxMigDeviceCount == nullptr ||
      fn_.nvmlDeviceGetMigDeviceHandleByIndex == nullptr) {
    return;
  }
  unsigned int max_count = 0;
  if (fn_.nvmlDeviceGetMaxMigDeviceCount(device_, &max_count) != kSuccess) return;
  // Slots may be empty (NOT_FOUND) between occupied ones: every slot is asked.
  for (unsigned int i = 0; i < max_count && i < kMaxMigSlots; ++i) {
    instance m;
    if (fn_.nvmlDeviceGetMigDeviceHandleByIndex(device_, i, &m.handle) != kSuccess ||
        m.handle == nullptr) {
      continue;
    }
    unsigned int id = 0;
    if (fn_.nvmlDeviceGetGpuInstanceId == nullptr ||
        fn_.nvmlDeviceGetGpuInstanceId(m.handle, &id) != kSuccess) {
      continue;  // an instance without its ids cannot be labelled
    }
    m.info.gpu_instance = id;
    if (fn_.nvmlDeviceGetComputeInstanceId == nullptr ||
        fn_.nvmlDeviceGetComputeInstanceId(m.handle, &id) != kSuccess) {
      continue;
    }
    m.info.compute_instance = id;
    char buf[kDeviceUuidBufferSize] = {};
    if (fn_.nvmlDeviceGetUUID != nullptr &&
        fn_.nvmlDeviceGetUUID(m.handle, buf, sizeof buf) == kSuccess) {
      m.info.uuid.assign(buf, strnlen(buf, sizeof buf));
    }
    std::memset(buf, 0, sizeof buf);
    if (fn_.nvmlDeviceGetName != nullptr &&
        fn_.nvmlDeviceGetName(m.handle, buf, sizeof buf) == kSuccess) {
      m.info.name.assign(buf, strnlen(buf, sizeof buf));
    }
    m.info.profile = std::string(mig_profile_of(m.info.name));
    instances_.push_back(std::move(m));
  }
}

void mig_reader::read_memory(instance& m) const {
  m.info.memory_total_bytes.reset();
  m.info.memory_used_bytes.reset();
  nvmlMemory_v2_t m2{};
  m2.version = kMemoryV2Version;
  if (fn_.nvmlDeviceGetMemoryInfo_v2 != nullptr &&
      fn_.nvmlDeviceGetMemoryInfo_v2(m.handle, &m2) == kSuccess) {
    m.info.memory_total_bytes = m2.total;
    m.info.memory_used_bytes = m2.used;
    return;
  }
  nvmlMemory_t m1{};
  if (fn_.nvmlDeviceGetMemoryInfo != nullptr &&
      fn_.nvmlDeviceGetMemoryInfo(m.handle, &m1) == kSuccess) {
    m.info.memory_total_bytes = m1.total;
    m.info.memory_used_bytes = m1.used;
  }
}

}  // namespace joules::nvml
