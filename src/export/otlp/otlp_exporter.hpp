#pragma once
// `--otlp URL`: pushes the metrics of a source to an OpenTelemetry collector (OTLP/HTTP, JSON
// encoding (otlp_json.hpp), gzip-compressed) every interval, from its own thread, over one
// kept-alive connection (http_client.hpp: TLS, proxies).
//
// A collector that is down or slow never blocks the sampler or the child: the thread collects a
// batch at every interval into a bounded queue (the oldest is dropped when it is full) and sends
// the oldest batch first; a request that may succeed later (no connection, a timeout, 429, 502,
// 503, 504) is sent again after the collector's Retry-After or an exponential backoff with
// jitter, up to retry.max_attempts (otlp_retry.hpp); a batch that is refused (any other status)
// or out of attempts is counted as failed.  finish() gives the request in flight, one last batch
// and the queue a budget in all; what is still queued then is counted as dropped.  The counts go
// to session_end and to stderr.
//
// Thread-safety: construct, start() and finish() from one thread; stats() from any.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "export/metrics/metric_source.hpp"
#include "export/otlp/otlp_json.hpp"
#include "export/otlp/otlp_retry.hpp"
#include "http/http_client.hpp"

namespace joules::exporter {

struct otlp_options {
  http_url url;
  http_tls tls;
  std::vector<std::pair<std::string, std::string>> headers;  // the user's
  std::chrono::milliseconds interval{10000};
  std::chrono::milliseconds timeout{5000};          // one request, connect to response
  std::chrono::milliseconds connect_timeout{3000};  // of it: TCP and TLS handshakes
  std::size_t max_queue = 32;                       // batches waiting to be sent
  retry_policy retry;
  // Resource attributes (service.name, host.name, joules.run_id, labels).
  std::vector<std::pair<std::string, std::string>> resource;
};

struct otlp_stats {
  std::uint64_t collected = 0;  // batches made
  std::uint64_t exported = 0;   // batches the collector accepted (2xx)
  std::uint64_t failed = 0;     // refused, or out of attempts
  std::uint64_t dropped = 0;    // pushed out of a full queue, or unsent at the end
  std::uint64_t attempts = 0;   // requests made
  std::uint64_t retries = 0;    // requests that were retries
  std::string last_error;       // of the last failed request
};

class otlp_exporter {
 public:
  otlp_exporter(otlp_options options, const source_factory& source);
  ~otlp_exporter();
  otlp_exporter(const otlp_exporter&) = delete;
  otlp_exporter& operator=(const otlp_exporter&) = delete;

  // Starts the thread; the first batch is collected one interval later.
  void start();
  // Lets a request in flight finish, collects a last batch and sends what it can, all within
  // `budget` from now (a request still running then is ended), and stops the thread.
  // Idempotent.
  void finish(std::chrono::milliseconds budget);

  otlp_stats stats() const;

 private:
  struct batch {
    std::string body;  // gzip
    int attempts = 0;
  };

  void run(std::stop_token stop);
  void collect();
  // Sends the oldest batch once (with at most `timeout`); updates the queue and the counts.
  // Returns true when the queue moved (sent or given up), false when the batch waits a retry.
  bool send_front(std::chrono::milliseconds timeout);

  otlp_options options_;
  // The thread's own.
  exposition exposition_;
  std::unique_ptr<metric_source> source_;
  std::int64_t start_unix_nano_ = 0;
  http_client client_;
  std::minstd_rand random_;
  int failures_ = 0;  // retryable failures in a row
  mono_time retry_at_{};

  mutable std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::deque<batch> queue_;
  otlp_stats stats_;
  bool finishing_ = false;
  std::chrono::milliseconds finish_budget_{0};
  mono_time finish_deadline_{};

  std::jthread thread_;
};

}  // namespace joules::exporter
