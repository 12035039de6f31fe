#include "runtime.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "fake_runtime.hpp"
#include "json_fields.hpp"
#include "nvml_exports.hpp"
#include "state_file.hpp"

// Taking every entry point's address makes a declared but undefined one a link error.
extern const void* const fake_nvml_entry_points[];
const void* const fake_nvml_entry_points[] = {
#define JOULES_NVML_FN(level, ret, name, params) reinterpret_cast<const void*>(&joules::nvml::name),
#include "backends/nvml/nvml_symbols.def"
#undef JOULES_NVML_FN
};

namespace fake_nvml {
namespace {

constexpr std::size_t kFnCount = static_cast<std::size_t>(fn::count);

struct symbol_info {
  const char* name;
  int level;
};
constexpr symbol_info kSymbols[kFnCount] = {
#define JOULES_NVML_FN(level, ret, name, params) {#name, level},
#include "backends/nvml/nvml_symbols.def"
#undef JOULES_NVML_FN
};

std::atomic<std::uint64_t> g_calls[kFnCount] = {};
std::atomic<unsigned int> g_device_threads{0};
std::atomic<std::uint64_t> g_energy_reads{0};
thread_local bool t_device_thread_counted = false;

std::atomic<const scenario*> g_current{nullptr};

// Guarded by g_init_mutex.  Loaded scenarios are never freed (handles into them must stay
// valid) and neither are these holders: a thread still calling NVML at exit must not find them
// destroyed.  They stay reachable, so LeakSanitizer does not count them.
std::mutex g_init_mutex;
int g_refcount = 0;
auto* g_loaded = new std::vector<std::unique_ptr<scenario>>();
auto* g_last_text = new std::string();
auto* g_last_error = new std::string();
auto* g_clock = new fake_gpu::scenario_clock("FAKE_NVML");

// Scenario problems are explained on stderr once each (NVML itself only returns a code).
void explain(const std::string& why) {
  if (why == *g_last_error) return;
  *g_last_error = why;
  std::fprintf(stderr, "fake_nvml: %s; nvmlInit returns NVML_ERROR_DRIVER_NOT_LOADED\n",
               why.c_str());
}

driver_defaults defaults_for_level(int level) {
  if (level >= kLevelPowerFields) return {"570.86.15", "12.570.86.15", 12080};
  if (level >= 1100) return {"470.256.02", "11.470.256.02", 11040};
  return {"390.157", "9.390.157", 9010};
}

void write_call_log() {
  const char* path = std::getenv("FAKE_NVML_CALL_LOG");
  if (path == nullptr || path[0] == '\0') return;
  std::ostringstream line;
  line << "{\"pid\":" << getpid() << ",\"calls\":{";
  const char* sep = "";
  for (std::size_t i = 0; i < kFnCount; ++i) {
    const std::uint64_t n = g_calls[i].load(std::memory_order_relaxed);
    if (n == 0) continue;
    line << sep << '"' << kSymbols[i].name << "\":" << n;
    sep = ",";
  }
  line << "},\"device_call_threads\":" << g_device_threads.load(std::memory_order_relaxed)
       << ",\"energy_reads\":" << g_energy_reads.load(std::memory_order_relaxed) << "}\n";
  const std::string s = line.str();
  // One write() of the whole line with O_APPEND, so processes sharing the log do not interleave.
  const int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  [[maybe_unused]] const ssize_t written = write(fd, s.data(), s.size());
  close(fd);
}

// Runs when the library is unloaded, dlclose or process exit alike.
__attribute__((destructor)) void at_unload() {
  write_call_log();
}

}  // namespace

int driver_level() {
  static const int level = [] {
    int max_level = 0;
    for (const symbol_info& s : kSymbols)
      max_level = std::max(max_level, s.level);
    // Ask the dynamic loader which symbols this very file exports: the variants differ only in
    // their version scripts, so the object code learns its variant here.
    static const int anchor = 0;
    Dl_info info{};
    if (dladdr(&anchor, &info) == 0 || info.dli_fname == nullptr) return max_level;
    void* self = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (self == nullptr) return max_level;
    int found = 0;
    for (const symbol_info& s : kSymbols) {
      if (s.level > found && dlsym(self, s.name) != nullptr) found = s.level;
    }
    dlclose(self);
    return found;
  }();
  return level;
}

void count_call(fn f) {
  g_calls[static_cast<std::size_t>(f)].fetch_add(1, std::memory_order_relaxed);
}

nv::nvmlReturn_t init() {
  std::lock_guard lock(g_init_mutex);
  if (g_refcount > 0) {
    ++g_refcount;
    return nv::kSuccess;
  }
  std::string text;
  std::string why;
  if (!fake_gpu::scenario_text("FAKE_NVML", text, why)) {
    explain(why);
    return nv::kErrorDriverNotLoaded;
  }
  // The same scenario text keeps its state (a power limit set earlier persists, as it does
  // across NVML sessions while the driver stays loaded); a new text starts afresh.
  const bool fresh = g_loaded->empty() || text != *g_last_text;
  if (fresh) {
    try {
      g_loaded->push_back(parse_scenario(text, defaults_for_level(driver_level())));
    } catch (const std::exception& e) {
      explain(std::string("bad scenario: ") + e.what());
      return nv::kErrorDriverNotLoaded;
    }
    *g_last_text = std::move(text);
  }
  scenario* s = g_loaded->back().get();
  if (s->init_error != nv::kSuccess) return s->init_error;
  if (!g_clock->configure(why)) {
    explain(why);
    return nv::kErrorDriverNotLoaded;
  }
  // Limits other processes set since (FAKE_NVML_STATE_FILE): a fresh scenario has had them all
  // along, a loaded one from now on.
  load_state(*s, fresh ? 0.0 : now_s());
  g_last_error->clear();
  g_current.store(s, std::memory_order_release);
  ++g_refcount;
  return nv::kSuccess;
}

nv::nvmlReturn_t shutdown() {
  std::lock_guard lock(g_init_mutex);
  // nvml.h: "no error is reported if nvmlShutdown() is called more times than nvmlInit()".
  if (g_refcount == 0) return nv::kSuccess;
  if (--g_refcount == 0) g_current.store(nullptr, std::memory_order_release);
  return nv::kSuccess;
}

double now_s() {
  return g_clock->now_s();
}

long long realtime_us() {
  return fake_gpu::realtime_us();
}

void sleep_us(unsigned int us) {
  fake_gpu::sleep_us(us);
}

void spin_energy_read(unsigned int us) {
  const auto cpu_ns = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<long long>(ts.tv_sec) * 1'000'000'000LL + ts.tv_nsec;
  };
  const long long until = cpu_ns() + 1000LL * us;
  while (cpu_ns() < until) {
  }
}

void count_energy_read() {
  g_energy_reads.fetch_add(1, std::memory_order_relaxed);
}

api_call::api_call(fn f) : scenario_(nullptr) {
  count_call(f);
  scenario_ = g_current.load(std::memory_order_acquire);
}

device_call::device_call(fn f, nv::nvmlDevice_t handle, mig_policy policy) {
  count_call(f);
  scenario_ = g_current.load(std::memory_order_acquire);
  if (scenario_ == nullptr) {
    status_ = nv::kErrorUninitialized;
    return;
  }
  slot_ = scenario_->slot_of(handle);
  if (slot_ == nullptr) {
    status_ = nv::kErrorInvalidArgument;
    return;
  }
  if (!t_device_thread_counted) {
    t_device_thread_counted = true;
    g_device_threads.fetch_add(1, std::memory_order_relaxed);
  }
  const device& d = *slot_->gpu;
  t_ = now_s();
  const unsigned int latency = d.faults.latency_us(t_, d.latency_us);
  if (latency > 0) {
    sleep_us(latency);
    t_ = now_s();
  }
  if (d.faults.lost(t_)) {
    status_ = nv::kErrorGpuIsLost;
  } else if (slot_->mig != nullptr && policy == mig_policy::refuse) {
    status_ = nv::kErrorNotSupported;
  }
}

}  // namespace fake_nvml
