// The OTLP exporter's retry policy (src/export/otlp/otlp_retry.hpp): which responses are sent
// again, the backoff with its jitter, and Retry-After.
#include "export/otlp/otlp_retry.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

namespace joules::exporter {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::system_clock;

TEST(OtlpRetry, OnlyTheSpecsStatusesAreRetryable) {
  for (int s : {429, 502, 503, 504})
    EXPECT_TRUE(retryable_status(s)) << s;
  for (int s : {200, 301, 400, 401, 403, 404, 408, 413, 415, 500, 501, 505})
    EXPECT_FALSE(retryable_status(s)) << s;
}

TEST(OtlpRetry, BackoffDoublesFromHalfASecondUpToItsCapWithBoundedJitter) {
  const retry_policy p;  // 500 ms, doubling, at most 30 s
  const std::int64_t nominal[] = {500, 1000, 2000, 4000, 8000, 16000, 30000, 30000};
  for (int failures = 1; failures <= 8; ++failures) {
    const std::int64_t n = nominal[failures - 1];
    EXPECT_EQ(backoff_delay(p, failures, 0.0).count(), n / 2) << failures;
    EXPECT_EQ(backoff_delay(p, failures, 1.0).count(), n) << failures;
    EXPECT_EQ(backoff_delay(p, failures, 0.5).count(), n * 3 / 4) << failures;
  }
  // Far past the cap, and out-of-range draws, stay within [max/2, max].
  EXPECT_EQ(backoff_delay(p, 1000000, 1.0), p.max);
  EXPECT_EQ(backoff_delay(p, 1000000, 7.0), p.max);
  EXPECT_EQ(backoff_delay(p, 1, -3.0), milliseconds(250));
  EXPECT_EQ(backoff_delay(p, 0, 0.0), milliseconds(250));  // no failure yet counts as the first
}

TEST(OtlpRetry, JitterSpreadsTheDelaysOverTheWholeBand) {
  const retry_policy p;
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::set<std::int64_t> seen;
  for (int i = 0; i < 1000; ++i) {
    const auto d = backoff_delay(p, 3, unit(rng)).count();  // nominal 2 s
    ASSERT_GE(d, 1000);
    ASSERT_LE(d, 2000);
    seen.insert(std::min<std::int64_t>((d - 1000) / 100, 9));
  }
  EXPECT_EQ(seen.size(), 10U);  // every tenth of the band was drawn
}

TEST(OtlpRetry, RetryAfterInSecondsOrAsADate) {
  const retry_policy p;
  const auto now = system_clock::from_time_t(1700000000);  // Tue, 14 Nov 2023 22:13:20 GMT
  EXPECT_EQ(parse_retry_after("0", now, p), milliseconds(0));
  EXPECT_EQ(parse_retry_after(" 7 ", now, p), seconds(7));
  EXPECT_EQ(parse_retry_after("120", now, p), p.max);  // over the cap
  EXPECT_EQ(parse_retry_after("Tue, 14 Nov 2023 22:13:25 GMT", now, p), seconds(5));
  EXPECT_EQ(parse_retry_after("Tuesday, 14-Nov-23 22:13:30 GMT", now, p), seconds(10));
  EXPECT_EQ(parse_retry_after("Tue, 14 Nov 2023 22:00:00 GMT", now, p), milliseconds(0));
  for (const char* bad : {"", "soon", "-1", "1.5", "99999999999"})
    EXPECT_EQ(parse_retry_after(bad, now, p), std::nullopt) << bad;
}

TEST(OtlpRetry, NextRetryGivesUpOnPermanentErrorsAndAfterTheLastAttempt) {
  const retry_policy p;  // 6 attempts
  const send_outcome unavailable{503, false, std::nullopt};
  const send_outcome refused{0, true, std::nullopt};
  const send_outcome bad_request{400, false, std::nullopt};
  const send_outcome untrusted{0, false, std::nullopt};
  const send_outcome throttled{429, false, seconds(3)};
  const send_outcome server_error{500, false, seconds(1)};  // Retry-After does not make it so

  EXPECT_EQ(next_retry(p, unavailable, 1, 1, 0.0), milliseconds(250));
  EXPECT_EQ(next_retry(p, refused, 2, 4, 1.0), milliseconds(4000));  // failures in a row count
  EXPECT_EQ(next_retry(p, throttled, 1, 9, 0.5), seconds(3));        // Retry-After over backoff
  EXPECT_EQ(next_retry(p, unavailable, 5, 5, 0.0), milliseconds(4000));
  EXPECT_EQ(next_retry(p, unavailable, 6, 6, 0.0), std::nullopt);
  EXPECT_EQ(next_retry(p, throttled, 6, 6, 0.0), std::nullopt);
  EXPECT_EQ(next_retry(p, bad_request, 1, 1, 0.0), std::nullopt);
  EXPECT_EQ(next_retry(p, untrusted, 1, 1, 0.0), std::nullopt);
  EXPECT_EQ(next_retry(p, server_error, 1, 1, 0.0), std::nullopt);
}

}  // namespace
}  // namespace joules::exporter
