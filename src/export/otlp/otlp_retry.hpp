#pragma once
// When the OTLP exporter sends a batch again, and after how long: the OTLP/HTTP specification's
// rules (https://opentelemetry.io/docs/specs/otlp/#failures-1,
// https://opentelemetry.io/docs/specs/otlp/#otlphttp-throttling,
// https://opentelemetry.io/docs/specs/otlp/#otlphttp-connection) as pure functions:
//
// - retried: 429, 502, 503 and 504, and a request that got no response for a reason that may
//   pass (refused or reset connection, timeout, a name that did not resolve); never any other
//   4xx or 5xx, nor a TLS certificate the client cannot trust (sending again changes nothing);
// - after the collector's Retry-After when it gives one (seconds or an HTTP date), else after
//   an exponential backoff with random jitter, so that many jobs whose collector went down at
//   the same moment do not all come back at the same moment
//   (https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/).
//
// Pure and thread-safe: the random draw is an argument.

#include <chrono>
#include <optional>
#include <string_view>

namespace joules::exporter {

struct retry_policy {
  int max_attempts = 6;  // requests per batch, the first included
  std::chrono::milliseconds initial{500};
  std::chrono::milliseconds max{30000};  // of a backoff, and of a Retry-After
};

// 429, 502, 503, 504.
bool retryable_status(int status);

// The wait after the `failures`-th failure in a row (1 for the first): nominal =
// min(initial * 2^(failures-1), max), drawn uniformly from [nominal/2, nominal] by `unit` in
// [0, 1) ("equal jitter").
std::chrono::milliseconds backoff_delay(const retry_policy& policy, int failures, double unit);

// A Retry-After value (RFC 9110, 10.2.3: delay-seconds or an HTTP date), as a wait from `now`:
// a date in the past is 0, a wait over policy.max is policy.max; nullopt when it is neither form.
std::optional<std::chrono::milliseconds> parse_retry_after(
    std::string_view value, std::chrono::system_clock::time_point now, const retry_policy& policy);

struct send_outcome {
  int status = 0;          // the HTTP status; 0 when no response came
  bool transient = false;  // with status 0: may pass (connection refused, timeout, ...)
  std::optional<std::chrono::milliseconds> retry_after;  // parsed Retry-After, if any
};

// The wait before sending the batch again, or nullopt to give it up: after a permanent error,
// or when it has had `attempts` == policy.max_attempts requests.  `failures` counts the failed
// requests in a row (across batches: a collector that stays down is asked ever less often).
std::optional<std::chrono::milliseconds> next_retry(const retry_policy& policy,
                                                    const send_outcome& outcome, int attempts,
                                                    int failures, double unit);

}  // namespace joules::exporter
