#include "ze_runtime.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "fake_runtime.hpp"
#include "limit_state.hpp"
#include "ze_exports.hpp"

// Taking every entry point's address makes a declared but undefined one a link error.
extern const void* const fake_ze_entry_points[];
const void* const fake_ze_entry_points[] = {
#define JOULES_ZE_FN(since, ret, name, params) reinterpret_cast<const void*>(&joules::ze::name),
#include "backends/levelzero/ze_symbols.def"
#undef JOULES_ZE_FN
};

namespace fake_ze {
namespace {

std::atomic<const scenario*> g_loaded_now{nullptr};
std::atomic<const scenario*> g_sysman{nullptr};
// Guarded by g_mutex; never freed (handles point into them).
std::mutex g_mutex;
auto* g_loaded = new std::vector<std::unique_ptr<scenario>>();
auto* g_last_text = new std::string();
auto* g_clock = new fake_gpu::scenario_clock("FAKE_ZE");
std::atomic<unsigned> g_device_threads{0};
thread_local bool t_counted = false;

// FAKE_ZE_CALL_LOG: the number of threads that called Sysman about a device, written at unload.
__attribute__((destructor)) void at_unload() {
  const char* path = std::getenv("FAKE_ZE_CALL_LOG");
  if (path == nullptr || path[0] == '\0') return;
  char line[96];
  const int n = std::snprintf(line, sizeof line, "{\"pid\":%d,\"device_call_threads\":%u}\n",
                              static_cast<int>(getpid()), g_device_threads.load());
  const int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  [[maybe_unused]] const ssize_t w = write(fd, line, static_cast<std::size_t>(n));
  close(fd);
}

// The devices as FAKE_ZE_STATE_FILE knows them (tests/fake_common/limit_state.hpp).
std::vector<fake_gpu::limited_device> ze_limited_devices(const scenario& s) {
  std::vector<fake_gpu::limited_device> out;
  out.reserve(s.devices.size());
  for (const device& d : s.devices) {
    out.push_back({d.uuid_text, d.power.get(), static_cast<unsigned>(std::max(d.min_limit_mw, 0)),
                   static_cast<unsigned>(std::max(d.max_limit_mw, 0)), &d.step_time_factor});
  }
  return out;
}

}  // namespace

void limits_changed() {
  if (const scenario* s = sysman()) fake_gpu::save_limits("FAKE_ZE", ze_limited_devices(*s));
}

long long init(bool zes) {
  std::lock_guard lock(g_mutex);
  std::string text;
  std::string why;
  if (!fake_gpu::scenario_text("FAKE_ZE", text, why)) {
    std::fprintf(stderr, "fake_level_zero: %s\n", why.c_str());
    return 0x78000001;  // ZE_RESULT_ERROR_UNINITIALIZED
  }
  const bool fresh = g_loaded->empty() || text != *g_last_text;
  if (fresh) {
    try {
      g_loaded->push_back(parse_scenario(text));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fake_level_zero: bad scenario: %s\n", e.what());
      return 0x78000001;
    }
    *g_last_text = std::move(text);
  }
  const scenario* s = g_loaded->back().get();
  if (s->init_error != 0) return s->init_error;
  if (!g_clock->configure(why)) {
    std::fprintf(stderr, "fake_level_zero: %s\n", why.c_str());
    return 0x78000001;
  }
  // The limits the driver holds (set by an earlier process), from the start of a new scenario.
  fake_gpu::load_limits("FAKE_ZE", ze_limited_devices(*s), fresh ? 0.0 : now_s());
  g_loaded_now.store(s, std::memory_order_release);
  const char* env = std::getenv("ZES_ENABLE_SYSMAN");
  if (zes || (env != nullptr && std::strcmp(env, "1") == 0)) {
    g_sysman.store(s, std::memory_order_release);
  }
  return 0;
}

const scenario* sysman() {
  return g_sysman.load(std::memory_order_acquire);
}
const scenario* loaded() {
  return g_loaded_now.load(std::memory_order_acquire);
}
double now_s() {
  return g_clock->now_s();
}

call::call(const void* handle, component::kind k) {
  const scenario* s = sysman();
  if (s == nullptr) {
    state_ = state::uninitialised;
    return;
  }
  comp_ = s->of(handle, k);
  if (comp_ == nullptr) {
    state_ = state::invalid;
    return;
  }
  if (!t_counted) {
    t_counted = true;
    g_device_threads.fetch_add(1, std::memory_order_relaxed);
  }
  const device& d = *comp_->owner;
  t_ = now_s();
  const unsigned latency = d.faults.latency_us(t_, d.latency_us);
  if (latency > 0) {
    fake_gpu::sleep_us(latency);
    t_ = now_s();
  }
  if (d.faults.lost(t_)) state_ = state::lost;
}

std::uint32_t call::result() const {
  switch (state_) {
    case state::uninitialised:
      return 0x78000001;  // ZE_RESULT_ERROR_UNINITIALIZED
    case state::invalid:
      return 0x78000005;  // ZE_RESULT_ERROR_INVALID_NULL_HANDLE
    case state::lost:
      return 0x70000001;  // ZE_RESULT_ERROR_DEVICE_LOST
    case state::ok:
      break;
  }
  return 0;
}

}  // namespace fake_ze
