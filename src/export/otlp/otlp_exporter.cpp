#include "export/otlp/otlp_exporter.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "http/gzip_member.hpp"

namespace joules::exporter {
namespace {

std::int64_t unix_nano_now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Every request's own headers, then the user's.  The body is gzip: every OTLP server supports
// it (https://opentelemetry.io/docs/specs/otlp/#protocol-details), and the JSON shrinks to about
// an eighth.
std::vector<std::pair<std::string, std::string>> request_headers(const otlp_options& o) {
  std::vector<std::pair<std::string, std::string>> h = {{"Content-Type", "application/json"},
                                                        {"Content-Encoding", "gzip"}};
  h.insert(h.end(), o.headers.begin(), o.headers.end());
  return h;
}

// For last_error, which reaches a terminal: the collector's own words are escaped and cut.
std::string describe(const http_result& r) {
  if (r.status == 0) return printable_excerpt(r.error, 400);
  if (r.body.empty()) return fmt::format("HTTP {}", r.status);
  return fmt::format("HTTP {}: {}", r.status, printable_excerpt(r.body, 200));
}

}  // namespace

otlp_exporter::otlp_exporter(otlp_options options, const source_factory& source)
    : options_(std::move(options)),
      source_(source(exposition_, exposition_, label_set{})),
      start_unix_nano_(unix_nano_now()),
      client_(options_.url, options_.tls, request_headers(options_)),
      random_(std::random_device{}()) {}

otlp_exporter::~otlp_exporter() {
  finish(std::chrono::milliseconds(0));
}

void otlp_exporter::start() {
  thread_ = std::jthread([this](std::stop_token stop) { run(std::move(stop)); });
}

void otlp_exporter::finish(std::chrono::milliseconds budget) {
  mono_time deadline;
  {
    std::lock_guard lock(mu_);
    if (!finishing_) {
      finishing_ = true;
      finish_budget_ = budget;
      finish_deadline_ = steady::now() + budget;
    }
    deadline = finish_deadline_;
  }
  // A request in flight ends by the deadline too: a slow collector never holds up joules' exit
  // for more than the budget.
  client_.cut_off(deadline);
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

otlp_stats otlp_exporter::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void otlp_exporter::collect() {
  // Every family at every push: OTLP has no shared body to reuse.
  source_->update();
  exposition_.clear_samples();
  source_->fill();
  source_->fill_live(steady::now(), serving_stats{});
  otlp_batch_info info;
  info.resource = options_.resource;
  info.time_unix_nano = unix_nano_now();
  info.start_unix_nano = start_unix_nano_;
  std::string json;
  write_otlp_json(exposition_, info, json);
  gzip_prefix gz = gzip_begin(json);
  batch b;
  b.body = std::move(gz.bytes);
  gzip_end(gz, "", b.body);
  std::lock_guard lock(mu_);
  ++stats_.collected;
  if (queue_.size() >= options_.max_queue) {
    queue_.pop_front();
    ++stats_.dropped;
  }
  queue_.push_back(std::move(b));
}

bool otlp_exporter::send_front(std::chrono::milliseconds timeout) {
  // Only this thread changes the queue; the mutex covers stats() readers of the counts.
  batch& b = queue_.front();
  const http_result r = client_.post(b.body, timeout, std::min(timeout, options_.connect_timeout));
  ++b.attempts;
  const double unit = std::uniform_real_distribution<double>(0.0, 1.0)(random_);
  const mono_time now = steady::now();
  std::lock_guard lock(mu_);
  ++stats_.attempts;
  if (b.attempts > 1) ++stats_.retries;
  if (r.ok()) {
    ++stats_.exported;
    queue_.pop_front();
    failures_ = 0;
    return true;
  }
  if (r.cut_off) {
    // finish()'s deadline: the batch stays queued and is counted as dropped.
    stats_.last_error = fmt::format("timed out: joules was exiting ({} ms after the command ended)",
                                    finish_budget_.count());
    retry_at_ = now;
    return false;
  }
  stats_.last_error = describe(r);
  send_outcome outcome{r.status, r.transient, std::nullopt};
  if (!r.retry_after.empty())
    outcome.retry_after =
        parse_retry_after(r.retry_after, std::chrono::system_clock::now(), options_.retry);
  const bool retryable = r.status == 0 ? r.transient : retryable_status(r.status);
  failures_ = retryable ? failures_ + 1 : 0;
  const auto wait = next_retry(options_.retry, outcome, b.attempts, failures_, unit);
  if (wait) {
    retry_at_ = now + *wait;
    return false;
  }
  ++stats_.failed;
  queue_.pop_front();
  // The next batch goes at once after a refusal of this one; after a failure that may pass, it
  // waits as a retry would.
  if (retryable)
    retry_at_ = now + outcome.retry_after.value_or(backoff_delay(options_.retry, failures_, unit));
  return true;
}

void otlp_exporter::run(std::stop_token stop) {
  mono_time next_collect = steady::now() + options_.interval;
  std::unique_lock lock(mu_);
  while (!finishing_ && !stop.stop_requested()) {
    const mono_time wake = queue_.empty() ? next_collect : std::min(next_collect, retry_at_);
    cv_.wait_until(lock, wake, [&] { return finishing_; });
    if (finishing_) break;
    lock.unlock();
    const mono_time now = steady::now();
    if (now >= next_collect) {
      collect();
      while (next_collect <= now)
        next_collect += options_.interval;
    }
    lock.lock();
    while (!queue_.empty() && !finishing_ && steady::now() >= retry_at_) {
      lock.unlock();
      const bool moved = send_front(options_.timeout);
      lock.lock();
      if (!moved) break;
    }
  }
  // The budget counts from finish(): what a request in flight then left of it goes to the last
  // batch (the run's final totals) and the queue.
  const mono_time deadline = finish_deadline_;
  lock.unlock();

  // The end: one last batch (the run's final totals), then as much of the queue as the budget
  // allows, waiting for retries (Retry-After included) as before, but not past the budget:
  // a wait that would end after it ends the sending now.
  collect();
  while (!queue_.empty() && retry_at_ < deadline) {
    std::this_thread::sleep_until(retry_at_);
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now());
    if (left.count() <= 0) break;
    send_front(std::min(options_.timeout, left));
  }
  lock.lock();
  stats_.dropped += queue_.size();
  queue_.clear();
}

}  // namespace joules::exporter
