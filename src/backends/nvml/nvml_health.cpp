#include "backends/nvml/nvml_health.hpp"

#include <algorithm>
#include <initializer_list>
#include <span>
#include <string_view>
#include <utility>

#include "backends/nvml/nvml_decode.hpp"

namespace joules::nvml {
namespace {

// NVML_PSTATE_UNKNOWN is 32; P0..P15 are real states.
constexpr unsigned kMaxPerformanceState = 15;
// The slow tier's period: a fault it reads shows within this time.
constexpr auto kSlowEvery = std::chrono::seconds(5);
// Timer jitter between reads on the sampler's grid, so that a read on time is not taken as late.
constexpr auto kReadJitter = std::chrono::milliseconds(10);
// Spare slots when sizing a process list: processes may start between two calls.
constexpr unsigned kSpareProcessSlots = 8;
// Per-process utilisation is read at most this often: it is shown (a share of the GPU's energy
// per process), not accounted, and one call a second keeps monitor within its call budget
// (docs/monitor-doctor.md).
constexpr auto kProcessUtilizationEvery = std::chrono::seconds(1);
// A sample above 100 % is not a share of time: the driver's, not the process's; left out.
constexpr unsigned kMaxUtilPercent = 100;
// Encoder and decoder utilisation are averaged by the driver over about a second: reading them
// more often shows the same figure.
constexpr auto kVideoEvery = std::chrono::seconds(1);

std::optional<double> milli(unsigned int v, bool ok) {
  return ok ? std::optional<double>(v / 1000.0) : std::nullopt;
}

}  // namespace

health_reader::health_reader(const entry_points& fn, nvmlDevice_t device)
    : fn_(fn), device_(device), gpm_(fn, device), mig_(fn, device), xid_(fn, device) {}

bool health_reader::settle(reading r, nvmlReturn_t rc) {
  state& s = state_[r];
  if (rc == kSuccess) {
    s = state::on;
    return true;
  }
  if (rc == kErrorGpuIsLost) {
    lost_ = true;
    return false;
  }
  if (s == state::unknown || rc == kErrorNotSupported || rc == kErrorFunctionNotFound) {
    s = state::off;
  }
  return false;
}

bool health_reader::slow_due(mono_time now) const {
  if (!slow_at_ || !last_read_) return true;
  // Due at the last read before kSlowEvery would pass: the next one is expected a gap later.
  const auto gap = now - *last_read_;
  return now + gap + kReadJitter >= *slow_at_ + kSlowEvery;
}

health_reading health_reader::read() {
  health_reading h;
  if (lost_) return h;
  if (!probed_) read_static();
  const mono_time now = steady::now();
  const bool slow = slow_due(now);
  last_read_ = now;
  unsigned int v = 0;
  nvmlUtilization_t u{};
  if (attempt(utilization, fn_.nvmlDeviceGetUtilizationRates != nullptr,
              [&] { return fn_.nvmlDeviceGetUtilizationRates(device_, &u); })) {
    h.gpu_util_percent = u.gpu;
    h.memory_util_percent = u.memory;
  }
  read_memory(h);
  read_temperatures(h);
  read_clocks(h);
  if (attempt(fan, fn_.nvmlDeviceGetFanSpeed != nullptr,
              [&] { return fn_.nvmlDeviceGetFanSpeed(device_, &v); })) {
    h.fan_percent = v;
  }
  // The generation follows the load (links drop to a slower one when the GPU idles): read every
  // time, or a busy GPU would show an idle link until the next slow read.
  if (attempt(pcie_generation, fn_.nvmlDeviceGetCurrPcieLinkGeneration != nullptr,
              [&] { return fn_.nvmlDeviceGetCurrPcieLinkGeneration(device_, &v); })) {
    h.pcie_generation = v;
  }
  h.pcie_max_generation = max_pcie_gen_;
  h.pcie_max_width = max_pcie_width_;
  if (slow) {
    slow_ = health_reading{};
    slow_.ecc_enabled = ecc_enabled_;
  }
  read_fields(h, slow, now);
  if (slow) {
    read_slow_getters();
    slow_at_ = now;
  }
  copy_slow(slow_, h);
  h.default_power_limit_w = default_limit_w_;
  read_performance_state(h, slow);
  read_processes(h, slow);
  read_process_utilization(h, now);
  read_video(h, now);
  gpm_.read(h);
  mig_.read(h, slow);
  xid_.read(h);
  probed_ = true;
  if (lost_) return {};  // nothing read from a GPU that fell off the bus is worth showing
  return h;
}

void health_reader::copy_slow(const health_reading& from, health_reading& to) {
  to.ecc_enabled = from.ecc_enabled;
  to.ecc_corrected_volatile = from.ecc_corrected_volatile;
  to.ecc_uncorrected_volatile = from.ecc_uncorrected_volatile;
  to.ecc_corrected_aggregate = from.ecc_corrected_aggregate;
  to.ecc_uncorrected_aggregate = from.ecc_uncorrected_aggregate;
  to.retired_pages_single_bit = from.retired_pages_single_bit;
  to.retired_pages_double_bit = from.retired_pages_double_bit;
  to.retirement_pending = from.retirement_pending;
  to.remapped_rows_corrected = from.remapped_rows_corrected;
  to.remapped_rows_uncorrected = from.remapped_rows_uncorrected;
  to.remap_pending = from.remap_pending;
  to.remap_failure = from.remap_failure;
  to.pcie_replays = from.pcie_replays;
  to.pcie_width = from.pcie_width;
  to.persistence_mode = from.persistence_mode;
  to.power_limit_w = from.power_limit_w;
  to.nvlink_crc_flit_errors = from.nvlink_crc_flit_errors;
  to.nvlink_crc_data_errors = from.nvlink_crc_data_errors;
  to.nvlink_replay_errors = from.nvlink_replay_errors;
  to.nvlink_recovery_errors = from.nvlink_recovery_errors;
  to.nvlink_errors_rising = from.nvlink_errors_rising;
  to.nvlink_links = from.nvlink_links;
}

void health_reader::read_static() {
  unsigned int v = 0;
  unsigned int w = 0;
  if (fn_.nvmlDeviceGetTemperatureThreshold != nullptr) {
    if (fn_.nvmlDeviceGetTemperatureThreshold(device_, kTemperatureThresholdSlowdown, &v) ==
        kSuccess) {
      slowdown_c_ = v;
    }
    if (fn_.nvmlDeviceGetTemperatureThreshold(device_, kTemperatureThresholdShutdown, &v) ==
        kSuccess) {
      shutdown_c_ = v;
    }
  }
  if (fn_.nvmlDeviceGetMaxClockInfo != nullptr) {
    if (fn_.nvmlDeviceGetMaxClockInfo(device_, kClockSm, &v) == kSuccess) max_sm_mhz_ = v;
    if (fn_.nvmlDeviceGetMaxClockInfo(device_, kClockMem, &v) == kSuccess) max_mem_mhz_ = v;
  }
  // The link's maximum for this GPU in this slot (nvmlDeviceGetGpuMaxPcieLinkGeneration would
  // give the GPU's alone, which a slower slot can never reach).
  if (fn_.nvmlDeviceGetMaxPcieLinkGeneration != nullptr &&
      fn_.nvmlDeviceGetMaxPcieLinkGeneration(device_, &v) == kSuccess) {
    max_pcie_gen_ = v;
  }
  if (fn_.nvmlDeviceGetMaxPcieLinkWidth != nullptr &&
      fn_.nvmlDeviceGetMaxPcieLinkWidth(device_, &v) == kSuccess) {
    max_pcie_width_ = v;
  }
  // The call first, then its result: as arguments of one call the two would be evaluated in
  // an unspecified order, and `v` could be read before the driver wrote it.
  if (fn_.nvmlDeviceGetPowerManagementDefaultLimit != nullptr) {
    const bool ok = fn_.nvmlDeviceGetPowerManagementDefaultLimit(device_, &v) == kSuccess;
    default_limit_w_ = milli(v, ok);
  }
  // ECC mode changes only at a reboot.
  if (fn_.nvmlDeviceGetEccMode != nullptr &&
      fn_.nvmlDeviceGetEccMode(device_, &v, &w) == kSuccess) {
    ecc_enabled_ = v == kFeatureEnabled;
  }
}

void health_reader::read_memory(health_reading& h) {
  // v2 separates reserved memory from used (docs/nvml-notes.md §8.1); its version field must be
  // nvmlMemory_v2, not 2, or the driver answers FUNCTION_NOT_FOUND (§5.7).
  nvmlMemory_v2_t m2{};
  m2.version = kMemoryV2Version;
  if (attempt(memory_v2, fn_.nvmlDeviceGetMemoryInfo_v2 != nullptr,
              [&] { return fn_.nvmlDeviceGetMemoryInfo_v2(device_, &m2); })) {
    h.memory_total_bytes = m2.total;
    h.memory_used_bytes = m2.used;
    h.memory_reserved_bytes = m2.reserved;
    return;
  }
  if (state_[memory_v2] != state::off) return;  // v2 works, failed this once
  nvmlMemory_t m1{};
  if (attempt(memory_v1, fn_.nvmlDeviceGetMemoryInfo != nullptr,
              [&] { return fn_.nvmlDeviceGetMemoryInfo(device_, &m1); })) {
    h.memory_total_bytes = m1.total;
    h.memory_used_bytes = m1.used;  // reserved memory counted as used
  }
}

void health_reader::read_temperatures(health_reading& h) {
  nvmlTemperature_v1_t t{};
  t.version = kTemperatureV1Version;
  t.sensorType = kTemperatureGpu;
  if (attempt(temperature_v, fn_.nvmlDeviceGetTemperatureV != nullptr,
              [&] { return fn_.nvmlDeviceGetTemperatureV(device_, &t); })) {
    h.temperature_c = t.temperature;
  } else if (state_[temperature_v] == state::off) {
    unsigned int c = 0;
    if (attempt(temperature, fn_.nvmlDeviceGetTemperature != nullptr,
                [&] { return fn_.nvmlDeviceGetTemperature(device_, kTemperatureGpu, &c); })) {
      h.temperature_c = c;
    }
  }
  // Memory temperature has no getter: field 82 only (read_fields).
  h.slowdown_temperature_c = slowdown_c_;
  h.shutdown_temperature_c = shutdown_c_;
}

void health_reader::read_clocks(health_reading& h) {
  unsigned int sm = 0;
  unsigned int mem = 0;
  if (attempt(clocks, fn_.nvmlDeviceGetClockInfo != nullptr, [&] {
        const nvmlReturn_t rc = fn_.nvmlDeviceGetClockInfo(device_, kClockSm, &sm);
        return rc != kSuccess ? rc : fn_.nvmlDeviceGetClockInfo(device_, kClockMem, &mem);
      })) {
    h.sm_clock_mhz = sm;
    h.memory_clock_mhz = mem;
  }
  h.max_sm_clock_mhz = max_sm_mhz_;
  h.max_memory_clock_mhz = max_mem_mhz_;
  // Same bits under the new name (12.2+) and the deprecated one (docs/nvml-notes.md §5.11).
  unsigned long long bits = 0;
  if (attempt(clock_events, fn_.nvmlDeviceGetCurrentClocksEventReasons != nullptr,
              [&] { return fn_.nvmlDeviceGetCurrentClocksEventReasons(device_, &bits); })) {
    h.throttle = decode_clock_events(bits);
  } else if (state_[clock_events] == state::off &&
             attempt(
                 throttle_reasons, fn_.nvmlDeviceGetCurrentClocksThrottleReasons != nullptr,
                 [&] { return fn_.nvmlDeviceGetCurrentClocksThrottleReasons(device_, &bits); })) {
    h.throttle = decode_clock_events(bits);
  }
}

void health_reader::read_performance_state(health_reading& h, bool slow) {
  // The performance state sets the clocks: while they hold, so does it (the slow tier reads it
  // anyway).  Without clocks it is read every time.
  const bool changed = !pstate_ || !h.sm_clock_mhz || h.sm_clock_mhz != pstate_sm_mhz_ ||
                       h.memory_clock_mhz != pstate_mem_mhz_;
  if (slow || changed) {
    unsigned int v = 0;
    pstate_.reset();
    if (attempt(performance_state, fn_.nvmlDeviceGetPerformanceState != nullptr,
                [&] { return fn_.nvmlDeviceGetPerformanceState(device_, &v); }) &&
        v <= kMaxPerformanceState) {
      pstate_ = v;
    }
    pstate_sm_mhz_ = h.sm_clock_mhz;
    pstate_mem_mhz_ = h.memory_clock_mhz;
  }
  h.performance_state = pstate_;
}

void health_reader::read_processes(health_reading& h, bool slow) {
  // A process that starts or ends, or whose memory grows or shrinks, changes the memory in use:
  // the list is read again then (the slow tier reads it anyway).  Without a memory reading it
  // is read every time.
  const bool changed =
      !processes_known_ || !h.memory_used_bytes || h.memory_used_bytes != processes_memory_used_;
  if (slow || changed) {
    processes_.clear();
    processes_known_ = read_process_kind(processes_, /*graphics=*/false);
    if (processes_known_) read_process_kind(processes_, /*graphics=*/true);
    processes_memory_used_ = h.memory_used_bytes;
  }
  h.processes = processes_;
  h.processes_known = processes_known_;
}

bool health_reader::read_process_kind(std::vector<gpu_process>& out, bool graphics) {
  // The newest call that works, probed in this order: the versioned detail list (12.4+), then
  // _v3 whose stride must be guessed (docs/nvml-notes.md §5.8), _v2, and the original call.
  for (reading method : {process_detail, process_v3, process_v2, process_v1}) {
    if (state_[method] == state::off) continue;
    // Slots of 32 bytes hold entries of any of the strides.
    std::vector<nvmlProcessDetail_v1_t> slots;
    unsigned int count = 0;
    auto call = [&]() -> nvmlReturn_t {
      auto* p = slots.empty() ? nullptr : slots.data();
      switch (method) {
        case process_detail: {
          if (fn_.nvmlDeviceGetRunningProcessDetailList == nullptr) return kErrorFunctionNotFound;
          nvmlProcessDetailList_v1_t list{};
          list.version = kProcessDetailListV1Version;
          list.mode = graphics ? 1U : 0U;
          list.numProcArrayEntries = count;
          list.procArray = p;
          const nvmlReturn_t rc = fn_.nvmlDeviceGetRunningProcessDetailList(device_, &list);
          count = list.numProcArrayEntries;
          return rc;
        }
        case process_v3: {
          auto f = graphics ? fn_.nvmlDeviceGetGraphicsRunningProcesses_v3
                            : fn_.nvmlDeviceGetComputeRunningProcesses_v3;
          if (f == nullptr) return kErrorFunctionNotFound;
          return f(device_, &count, reinterpret_cast<nvmlProcessInfo_v2_t*>(p));
        }
        case process_v2: {
          auto f = graphics ? fn_.nvmlDeviceGetGraphicsRunningProcesses_v2
                            : fn_.nvmlDeviceGetComputeRunningProcesses_v2;
          if (f == nullptr) return kErrorFunctionNotFound;
          return f(device_, &count, reinterpret_cast<nvmlProcessInfo_v2_t*>(p));
        }
        default: {
          auto f = graphics ? fn_.nvmlDeviceGetGraphicsRunningProcesses
                            : fn_.nvmlDeviceGetComputeRunningProcesses;
          if (f == nullptr) return kErrorFunctionNotFound;
          return f(device_, &count, reinterpret_cast<nvmlProcessInfo_v1_t*>(p));
        }
      }
    };
    // Room for the longest list seen so far and a few more, so that one call usually does;
    // INSUFFICIENT_SIZE gives the count needed.
    slots.assign(process_slots_ + kSpareProcessSlots, nvmlProcessDetail_v1_t{});
    count = static_cast<unsigned int>(slots.size());
    auto sized = [&]() -> nvmlReturn_t {
      nvmlReturn_t rc = call();
      for (int tries = 0; rc == kErrorInsufficientSize && tries < 3; ++tries) {
        slots.assign(count + kSpareProcessSlots, nvmlProcessDetail_v1_t{});
        count = static_cast<unsigned int>(slots.size());
        rc = call();
      }
      return rc;
    };
    if (attempt(method, true, sized)) {
      const auto bytes = std::as_bytes(std::span(slots));
      std::size_t stride = kProcessStrideDetail;
      if (method == process_v3) stride = process_stride(bytes, count);
      if (method == process_v2) stride = kProcessStrideV2;
      if (method == process_v1) stride = sizeof(nvmlProcessInfo_v1_t);
      for (auto& p : decode_processes(bytes, count, stride, graphics))
        out.push_back(p);
      process_slots_ = std::max<std::size_t>(process_slots_, count);
      return true;
    }
    if (state_[method] == state::on) return false;  // it works, but not this time
  }
  return false;
}

void health_reader::read_process_utilization(health_reading& h, mono_time now) {
  // Asked only while the GPU has processes: with none there is nothing to share out.
  if (!processes_known_ || processes_.empty()) return;
  const bool due = !sm_util_at_ || now + kReadJitter >= *sm_util_at_ + kProcessUtilizationEvery;
  if (due) {
    sm_util_at_ = now;
    std::vector<nvmlProcessUtilizationSample_t> samples;
    unsigned int count = 0;
    auto call = [&]() -> nvmlReturn_t {
      count = static_cast<unsigned int>(samples.size());
      const nvmlReturn_t rc =
          fn_.nvmlDeviceGetProcessUtilization(device_, samples.data(), &count, sm_util_seen_us_);
      // NOT_FOUND: no process had a sample since the last call, every one ran nothing.
      if (rc == kErrorNotFound) {
        count = 0;
        return kSuccess;
      }
      return rc;
    };
    // Sized like the process lists: the driver may return several samples per process.
    auto sized = [&]() -> nvmlReturn_t {
      samples.assign(std::max(sm_util_slots_, processes_.size()) + kSpareProcessSlots,
                     nvmlProcessUtilizationSample_t{});
      nvmlReturn_t rc = call();
      for (int tries = 0; rc == kErrorInsufficientSize && tries < 3; ++tries) {
        samples.assign(count + kSpareProcessSlots, nvmlProcessUtilizationSample_t{});
        rc = call();
      }
      return rc;
    };
    sm_util_.clear();
    sm_util_ok_ =
        attempt(process_utilization, fn_.nvmlDeviceGetProcessUtilization != nullptr, sized);
    if (sm_util_ok_) {
      count = std::min<unsigned int>(count, static_cast<unsigned int>(samples.size()));
      sm_util_slots_ = std::max<std::size_t>(sm_util_slots_, count);
      // The mean of each pid's samples newer than the last call.
      std::vector<std::pair<unsigned, std::pair<double, unsigned>>> sums;
      for (unsigned int i = 0; i < count; ++i) {
        const auto& s = samples[i];
        sm_util_seen_us_ = std::max(sm_util_seen_us_, s.timeStamp);
        if (s.smUtil > kMaxUtilPercent) continue;
        auto it =
            std::find_if(sums.begin(), sums.end(), [&](const auto& e) { return e.first == s.pid; });
        if (it == sums.end()) it = sums.insert(sums.end(), {s.pid, {0.0, 0U}});
        it->second.first += s.smUtil;
        ++it->second.second;
      }
      for (const auto& [pid, sum] : sums)
        sm_util_.emplace_back(pid, sum.first / sum.second);
    }
  }
  // A call that failed this once (the reading stays on) leaves the shares unknown until the next.
  if (!sm_util_ok_) return;
  h.process_utilization_known = true;
  for (auto& p : h.processes) {
    const auto it = std::find_if(sm_util_.begin(), sm_util_.end(),
                                 [&](const auto& e) { return e.first == p.pid; });
    p.sm_util_percent = it == sm_util_.end() ? 0.0 : it->second;
  }
}

void health_reader::read_video(health_reading& h, mono_time now) {
  const bool due = !video_at_ || now + kReadJitter >= *video_at_ + kVideoEvery;
  if (due) {
    video_at_ = now;
    unsigned int v = 0;
    unsigned int period_us = 0;
    encoder_.reset();
    decoder_.reset();
    if (attempt(encoder, fn_.nvmlDeviceGetEncoderUtilization != nullptr,
                [&] { return fn_.nvmlDeviceGetEncoderUtilization(device_, &v, &period_us); }) &&
        v <= kMaxUtilPercent) {
      encoder_ = v;
    }
    if (attempt(decoder, fn_.nvmlDeviceGetDecoderUtilization != nullptr,
                [&] { return fn_.nvmlDeviceGetDecoderUtilization(device_, &v, &period_us); }) &&
        v <= kMaxUtilPercent) {
      decoder_ = v;
    }
  }
  h.encoder_util_percent = encoder_;
  h.decoder_util_percent = decoder_;
}

std::vector<std::string> health_reader::supported() const {
  struct group {
    const char* name;
    std::initializer_list<reading> readings;
  };
  const group groups[] = {
      {"utilization", {utilization}},
      {"video_utilization", {encoder, decoder}},
      {"memory", {memory_v2, memory_v1}},
      {"temperature", {temperature_v, temperature}},
      {"memory_temperature", {field_memory_temperature}},
      {"clocks", {clocks}},
      {"clock_events", {clock_events, throttle_reasons}},
      {"fan", {fan}},
      {"performance_state", {performance_state}},
      {"ecc_errors",
       {field_ecc_corrected_volatile, field_ecc_uncorrected_volatile, field_ecc_corrected_aggregate,
        field_ecc_uncorrected_aggregate, ecc_corrected_volatile, ecc_uncorrected_volatile,
        ecc_corrected_aggregate, ecc_uncorrected_aggregate}},
      {"retired_pages",
       {field_retired_single, field_retired_double, retired_single, retired_double}},
      {"retirement_pending", {field_retirement_pending, retirement_pending}},
      {"remapped_rows", {field_remapped_rows, remapped_rows}},
      {"pcie_link", {pcie_generation, pcie_width}},
      {"pcie_replays", {field_pcie_replay, pcie_replay}},
      {"pcie_throughput", {field_pcie_bytes}},
      {"nvlink_errors", {field_nvlink_errors}},
      {"nvlink_state", {nvlink_state}},
      {"persistence_mode", {persistence}},
      {"power_limit", {field_power_limit, power_limit}},
      {"processes", {process_detail, process_v3, process_v2, process_v1}},
      {"process_utilization", {process_utilization}},
  };
  std::vector<std::string> out;
  for (const group& g : groups) {
    if (std::string_view(g.name) == "ecc_errors" && ecc_enabled_) out.emplace_back("ecc_mode");
    for (reading r : g.readings) {
      if (state_[r] == state::on) {
        out.emplace_back(g.name);
        break;
      }
    }
  }
  if (gpm_.supported()) out.emplace_back("gpm");
  if (xid_.supported()) out.emplace_back("xid_errors");
  return out;
}

}  // namespace joules::nvml
