#include "fake_runtime.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace fake_gpu {

bool scenario_text(const std::string& prefix, std::string& text, std::string& why) {
  const std::string name = prefix + "_SCENARIO";
  const char* env = std::getenv(name.c_str());
  if (env == nullptr || env[0] == '\0') {
    why = name + " is not set (a scenario file, or its JSON text)";
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
    why = std::string("cannot read the scenario file ") + env;
    return false;
  }
  text.clear();
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, in)) > 0;)
    text.append(buf, n);
  std::fclose(in);
  return true;
}

long long monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

long long realtime_us() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000LL + ts.tv_nsec / 1000;
}

bool scenario_clock::configure(std::string& why) {
  const std::string epoch_name = prefix_ + "_EPOCH_NS";
  const char* env = std::getenv(epoch_name.c_str());
  if (env != nullptr && env[0] != '\0') {
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(env, &end, 10);
    if (errno != 0 || end == env || *end != '\0') {
      why = epoch_name + " is not an integer: " + env;
      return false;
    }
    epoch_ns_.store(v, std::memory_order_relaxed);
    epoch_set_ = true;
  } else if (!epoch_set_) {
    epoch_ns_.store(monotonic_ns(), std::memory_order_relaxed);
    epoch_set_ = true;
  }
  // <prefix>_CLOCK_FILE: 8 bytes holding scenario time in nanoseconds (int64, native order),
  // which tests write to step time exactly.  Mapped once per path and never unmapped.
  const std::string file_name = prefix_ + "_CLOCK_FILE";
  const char* file = std::getenv(file_name.c_str());
  if (file == nullptr || file[0] == '\0') {
    clock_.store(nullptr, std::memory_order_release);
    return true;
  }
  if (clock_path_ == file && clock_.load(std::memory_order_relaxed) != nullptr) return true;
  const int fd = open(file, O_RDONLY | O_CLOEXEC);
  void* map = fd < 0 ? MAP_FAILED : mmap(nullptr, 8, PROT_READ, MAP_SHARED, fd, 0);
  if (fd >= 0) close(fd);
  if (map == MAP_FAILED) {
    why = "cannot map " + file_name + " " + file;
    return false;
  }
  clock_path_ = file;
  clock_.store(static_cast<const long long*>(map), std::memory_order_release);
  return true;
}

double scenario_clock::now_s() const {
  if (const long long* clock = clock_.load(std::memory_order_acquire); clock != nullptr) {
    return static_cast<double>(__atomic_load_n(clock, __ATOMIC_RELAXED)) / 1e9;
  }
  return static_cast<double>(monotonic_ns() - epoch_ns_.load(std::memory_order_relaxed)) / 1e9;
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

}  // namespace fake_gpu
