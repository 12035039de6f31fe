#include "amd_runtime.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "amd_exports.hpp"
#include "fake_runtime.hpp"
#include "limit_state.hpp"

// Taking every entry point's address makes a declared but undefined one a link error.
extern const void* const fake_amdsmi_entry_points[];
const void* const fake_amdsmi_entry_points[] = {
#define JOULES_AMDSMI_FN(since, ret, name, params) \
  reinterpret_cast<const void*>(&joules::amd::name),
#include "backends/amdsmi/amdsmi_symbols.def"
#undef JOULES_AMDSMI_FN
#define JOULES_RSMI_FN(since, ret, name, params) reinterpret_cast<const void*>(&joules::amd::name),
#include "backends/amdsmi/rocm_smi_symbols.def"
#undef JOULES_RSMI_FN
};

namespace fake_amdsmi {
namespace {

std::atomic<const scenario*> g_current{nullptr};
// Guarded by g_mutex; never freed, so that handles stay valid and a thread still calling at exit
// finds them (they stay reachable, so LeakSanitizer does not count them).
std::mutex g_mutex;
int g_refcount = 0;
auto* g_loaded = new std::vector<std::unique_ptr<scenario>>();
auto* g_last_text = new std::string();
auto* g_clock = new fake_gpu::scenario_clock("FAKE_AMDSMI");
std::atomic<unsigned> g_device_threads{0};
thread_local bool t_counted = false;

void explain(const std::string& why) {
  std::fprintf(stderr, "fake_amdsmi: %s; init fails\n", why.c_str());
}

// The GPUs as FAKE_AMDSMI_STATE_FILE knows them (tests/fake_common/limit_state.hpp).
std::vector<fake_gpu::limited_device> amd_limited_devices(const scenario& s) {
  std::vector<fake_gpu::limited_device> out;
  out.reserve(s.gpus.size());
  for (const gpu& g : s.gpus)
    out.push_back({g.uuid, g.power.get(), g.min_limit_mw, g.max_limit_mw, &g.step_time_factor});
  return out;
}

// FAKE_AMDSMI_CALL_LOG: one JSON line at unload with the number of threads that called a
// function about a GPU, so that tests can check only joules' sampler thread does.
__attribute__((destructor)) void at_unload() {
  const char* path = std::getenv("FAKE_AMDSMI_CALL_LOG");
  if (path == nullptr || path[0] == '\0') return;
  char line[96];
  const int n = std::snprintf(line, sizeof line, "{\"pid\":%d,\"device_call_threads\":%u}\n",
                              static_cast<int>(getpid()), g_device_threads.load());
  const int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  [[maybe_unused]] const ssize_t w = write(fd, line, static_cast<std::size_t>(n));
  close(fd);
}

}  // namespace

long long init() {
  std::lock_guard lock(g_mutex);
  if (g_refcount > 0) {
    ++g_refcount;
    return 0;
  }
  std::string text;
  std::string why;
  if (!fake_gpu::scenario_text("FAKE_AMDSMI", text, why)) {
    explain(why);
    return -1;
  }
  // The same text keeps its state; a new one starts afresh.
  const bool fresh = g_loaded->empty() || text != *g_last_text;
  if (fresh) {
    try {
      g_loaded->push_back(parse_scenario(text));
    } catch (const std::exception& e) {
      explain(std::string("bad scenario: ") + e.what());
      return -1;
    }
    *g_last_text = std::move(text);
  }
  const scenario* s = g_loaded->back().get();
  if (s->init_error != 0) return s->init_error;
  if (!g_clock->configure(why)) {
    explain(why);
    return -1;
  }
  // The limits the driver holds (set by an earlier process), from the start of a new scenario.
  fake_gpu::load_limits("FAKE_AMDSMI", amd_limited_devices(*s), fresh ? 0.0 : now_s());
  g_current.store(s, std::memory_order_release);
  ++g_refcount;
  return 0;
}

void limits_changed() {
  if (const scenario* s = current()) fake_gpu::save_limits("FAKE_AMDSMI", amd_limited_devices(*s));
}

void shutdown() {
  std::lock_guard lock(g_mutex);
  if (g_refcount > 0 && --g_refcount == 0) g_current.store(nullptr, std::memory_order_release);
}

const scenario* current() {
  return g_current.load(std::memory_order_acquire);
}

double now_s() {
  return g_clock->now_s();
}

call::call(const void* handle) {
  const scenario* s = current();
  if (s == nullptr) {
    state_ = state::uninitialised;
    return;
  }
  enter(s->of(handle));
}

call::call(std::uint32_t index) {
  const scenario* s = current();
  if (s == nullptr) {
    state_ = state::uninitialised;
    return;
  }
  enter(index < s->processors.size() ? &s->processors[index] : nullptr);
}

void call::enter(const processor* p) {
  proc_ = p;
  if (p == nullptr) {
    state_ = state::invalid;
    return;
  }
  if (!t_counted) {
    t_counted = true;
    g_device_threads.fetch_add(1, std::memory_order_relaxed);
  }
  const gpu& g = *p->owner;
  t_ = now_s();
  const unsigned latency = g.faults.latency_us(t_, g.latency_us);
  if (latency > 0) {
    fake_gpu::sleep_us(latency);
    t_ = now_s();
  }
  if (g.faults.lost(t_)) state_ = state::lost;
}

long long call::fault(fake_gpu::reading_kind kind) const {
  return owner().faults.reading_status(kind, t_, 0);
}

}  // namespace fake_amdsmi
