#pragma once
// What every fake library does the same way at its initialisation and on each call: read its
// scenario (from <PREFIX>_SCENARIO, the JSON text or a file), keep scenario time (from
// <PREFIX>_EPOCH_NS, or <PREFIX>_CLOCK_FILE for exact tests), and sleep like an ioctl that waits
// on the GPU.  The prefixes (FAKE_NVML, FAKE_AMDSMI, FAKE_ZE) keep the fakes of a mixed node
// apart.
//
// Thread-safety: configure() is called under the fake's initialisation lock; now_s() from any
// thread, lock-free.

#include <atomic>
#include <string>

namespace fake_gpu {

// The scenario text: <prefix>_SCENARIO itself when it is JSON, else the file it names.  False,
// with the reason in `why`, when it is unset or unreadable.
bool scenario_text(const std::string& prefix, std::string& text, std::string& why);

class scenario_clock {
 public:
  explicit scenario_clock(std::string prefix) : prefix_(std::move(prefix)) {}

  // Reads <prefix>_EPOCH_NS (else the first configure() is time 0) and maps <prefix>_CLOCK_FILE
  // when set.  False, with the reason, on a bad value.
  bool configure(std::string& why);
  // Scenario time in seconds: (CLOCK_MONOTONIC - epoch) / 1e9, or the clock file's value.
  double now_s() const;

 private:
  std::string prefix_;
  std::atomic<long long> epoch_ns_{0};
  std::atomic<const long long*> clock_{nullptr};
  bool epoch_set_ = false;
  std::string clock_path_;
};

long long monotonic_ns();
long long realtime_us();
// Sleeps (clock_nanosleep, never a spin) like an ioctl that waits on the GPU.
void sleep_us(unsigned int us);

}  // namespace fake_gpu
