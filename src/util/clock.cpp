#include "util/clock.hpp"

#include <fmt/format.h>

#include <ctime>

namespace joules {

std::string iso8601_utc(std::chrono::system_clock::time_point t) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch());
  const auto secs = std::chrono::floor<std::chrono::seconds>(us);
  const std::time_t tt = static_cast<std::time_t>(secs.count());
  std::tm tm{};
  gmtime_r(&tt, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (us - secs).count());
}

}  // namespace joules
