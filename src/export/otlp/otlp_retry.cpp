#include "export/otlp/otlp_retry.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <string>

#include "http/curl_library.hpp"
#include "util/strings.hpp"

namespace joules::exporter {

bool retryable_status(int status) {
  return status == 429 || status == 502 || status == 503 || status == 504;
}

std::chrono::milliseconds backoff_delay(const retry_policy& policy, int failures, double unit) {
  const double initial = static_cast<double>(policy.initial.count());
  const double max = static_cast<double>(policy.max.count());
  // 2^62 is past any max; the exponent is bounded so that the double stays finite.
  const int exponent = std::clamp(failures - 1, 0, 62);
  const double nominal = std::min(max, std::ldexp(initial, exponent));
  const double u = std::clamp(unit, 0.0, 1.0);
  return std::chrono::milliseconds(std::llround(nominal / 2 + u * (nominal / 2)));
}

std::optional<std::chrono::milliseconds> parse_retry_after(
    std::string_view value, std::chrono::system_clock::time_point now, const retry_policy& policy) {
  value = trim(value);
  if (value.empty()) return std::nullopt;
  if (const auto seconds = parse_uint(value, 0, UINT32_MAX)) {
    return std::min<std::chrono::milliseconds>(std::chrono::seconds(*seconds), policy.max);
  }
  // IMF-fixdate, and the obsolete RFC 850 and asctime forms RFC 9110 asks recipients to accept;
  // curl_getdate() reads all three (https://curl.se/libcurl/c/curl_getdate.html).
  // Without libcurl no date is read, and the policy's own wait applies.
  const curl_library* curl = load_curl();
  if (curl == nullptr) return std::nullopt;
  const std::string text(value);
  const time_t at = curl->getdate(text.c_str(), nullptr);
  if (at == -1) return std::nullopt;
  const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::system_clock::from_time_t(at) - now);
  return std::clamp<std::chrono::milliseconds>(wait, std::chrono::milliseconds(0), policy.max);
}

std::optional<std::chrono::milliseconds> next_retry(const retry_policy& policy,
                                                    const send_outcome& outcome, int attempts,
                                                    int failures, double unit) {
  const bool retryable = outcome.status == 0 ? outcome.transient : retryable_status(outcome.status);
  if (!retryable || attempts >= policy.max_attempts) return std::nullopt;
  if (outcome.retry_after) return *outcome.retry_after;
  return backoff_delay(policy, failures, unit);
}

}  // namespace joules::exporter
