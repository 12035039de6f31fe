#pragma once
// Clocks: steady_clock schedules and stamps (it is CLOCK_MONOTONIC on Linux, the clock the fake
// NVML and test children use too); system_clock only labels records with wall-clock time.

#include <chrono>
#include <cstdint>
#include <string>

namespace joules {

using steady = std::chrono::steady_clock;
using mono_time = steady::time_point;

// Seconds on CLOCK_MONOTONIC, as written to records as `*_monotonic_s`.
inline double monotonic_seconds(mono_time t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

inline std::int64_t monotonic_ns(mono_time t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

inline double seconds_between(mono_time a, mono_time b) {
  return std::chrono::duration<double>(b - a).count();
}

// ISO-8601 UTC with microseconds, e.g. 2026-11-22T18:04:05.123456Z.
std::string iso8601_utc(std::chrono::system_clock::time_point t);

}  // namespace joules
