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
thread_local bool t_device_thread_counted = false;

std::atomic<const scenario*> g_current{nullptr};
std::atomic<long long> g_epoch_ns{0};
std::atomic<const long long*> g_clock{nullptr};

// Guarded by g_init_mutex.  Loaded scenarios are never freed (handles into them must stay
// valid) and neither are these holders: a thread still calling NVML at exit must not find them
// destroyed.  They stay reachable, so LeakSanitizer does not count them.
std::mutex g_init_mutex;
int g_refcount = 0;
bool g_epoch_set = false;
auto* g_loaded = new std::vector<std::unique_ptr<scenario>>();
auto* g_last_text = new std::string();
auto* g_last_error = new std::string();
auto* g_clock_path = new std::string();

// Scenario problems are explained on stderr once each (NVML itself only returns a code).
void explain(const std::string& why) {
  if (why == *g_last_error) return;
  *g_last_error = why;
  std::fprintf(stderr, "fake_nvml: %s; nvmlInit returns NVML_ERROR_DRIVER_NOT_LOADED\n",
               why.c_str());
}

long long monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

driver_defaults defaults_for_level(int level) {
  if (level >= kLevelPowerFields) return {"570.86.15", "12.570.86.15", 12080};
  if (level >= 1100) return {"470.256.02", "11.470.256.02", 11040};
  return {"390.157", "9.390.157", 9010};
}

// The scenario text: FAKE_NVML_SCENARIO itself when it is JSON, else the file it names.
bool scenario_text(std::string& text) {
  const char* env = std::getenv("FAKE_NVML_SCENARIO");
  if (env == nullptr || env[0] == '\0') {
    explain("FAKE_NVML_SCENARIO is not set (a scenario file, or its JSON text)");
    return false;
  }
  const char* p = env;
  while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
    ++p;
  if (*p == '{') {
    text = env;
    return true;
  }
  // stdio rather than istreambuf_iterator, whose inlined code trips -Wnull-dereference at -O2.
  std::FILE* in = std::fopen(env, "rb");
  if (in == nullptr) {
    explain(std::string("cannot read the scenario file ") + env);
    return false;
  }
  text.clear();
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, in)) > 0;)
    text.append(buf, n);
  std::fclose(in);
  return true;
}

// FAKE_NVML_CLOCK_FILE: 8 bytes holding scenario time in nanoseconds (int64, native order),
// which tests write to step time exactly.  Mapped once per path and never unmapped.
bool map_clock_file() {
  const char* env = std::getenv("FAKE_NVML_CLOCK_FILE");
  if (env == nullptr || env[0] == '\0') {
    g_clock.store(nullptr, std::memory_order_release);
    return true;
  }
  if (*g_clock_path == env && g_clock.load(std::memory_order_relaxed) != nullptr) return true;
  const int fd = open(env, O_RDONLY | O_CLOEXEC);
  void* map = fd < 0 ? MAP_FAILED : mmap(nullptr, 8, PROT_READ, MAP_SHARED, fd, 0);
  if (fd >= 0) close(fd);
  if (map == MAP_FAILED) {
    explain(std::string("cannot map FAKE_NVML_CLOCK_FILE ") + env);
    return false;
  }
  *g_clock_path = env;
  g_clock.store(static_cast<const long long*>(map), std::memory_order_release);
  return true;
}

bool set_epoch() {
  const char* env = std::getenv("FAKE_NVML_EPOCH_NS");
  if (env != nullptr && env[0] != '\0') {
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(env, &end, 10);
    if (errno != 0 || end == env || *end != '\0') {
      explain(std::string("FAKE_NVML_EPOCH_NS is not an integer: ") + env);
      return false;
    }
    g_epoch_ns.store(v, std::memory_order_relaxed);
    g_epoch_set = true;
  } else if (!g_epoch_set) {
    g_epoch_ns.store(monotonic_ns(), std::memory_order_relaxed);
    g_epoch_set = true;
  }
  return true;
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
  line << "},\"device_call_threads\":" << g_device_threads.load(std::memory_order_relaxed) << "}\n";
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
  if (!scenario_text(text)) return nv::kErrorDriverNotLoaded;
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
  if (!set_epoch() || !map_clock_file()) return nv::kErrorDriverNotLoaded;
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
  if (const long long* clock = g_clock.load(std::memory_order_acquire); clock != nullptr) {
    return static_cast<double>(__atomic_load_n(clock, __ATOMIC_RELAXED)) / 1e9;
  }
  return static_cast<double>(monotonic_ns() - g_epoch_ns.load(std::memory_order_relaxed)) / 1e9;
}

long long realtime_us() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000LL + ts.tv_nsec / 1000;
}

void sleep_us(unsigned int us) {
  if (us == 0) return;
  timespec until{};
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += static_cast<time_t>(us / 1000000U);
  until.tv_nsec += static_cast<long>(us % 1000000U) * 1000L;
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec += 1;
    until.tv_nsec -= 1000000000L;
  }
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nullptr) == EINTR) {
  }
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
