#include "export/otlp/otlp_exporter.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace joules::exporter {
namespace {

std::int64_t unix_nano_now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

otlp_exporter::otlp_exporter(otlp_options options, const source_factory& source)
    : options_(std::move(options)),
      source_(source(exposition_, exposition_, label_set{})),
      start_unix_nano_(unix_nano_now()) {}

otlp_exporter::~otlp_exporter() {
  finish(std::chrono::milliseconds(0));
}

void otlp_exporter::start() {
  thread_ = std::jthread([this](std::stop_token stop) { run(std::move(stop)); });
}

void otlp_exporter::finish(std::chrono::milliseconds budget) {
  {
    std::lock_guard lock(mu_);
    if (!finishing_) {
      finishing_ = true;
      finish_budget_ = budget;
    }
  }
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
  batch b;
  write_otlp_json(exposition_, info, b.body);
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
  const http_result r =
      http_post(options_.target, "application/json", options_.headers, b.body, timeout);
  ++b.attempts;
  std::lock_guard lock(mu_);
  ++stats_.attempts;
  if (b.attempts > 1) ++stats_.retries;
  if (r.ok()) {
    ++stats_.exported;
    queue_.pop_front();
    backoff_ = std::chrono::milliseconds(0);
    return true;
  }
  stats_.last_error = r.status != 0 ? fmt::format("HTTP {}", r.status) : r.error;
  // https://opentelemetry.io/docs/specs/otlp/#retryable-response-codes
  const bool retryable = r.status == 0 || r.status == 408 || r.status == 429 || r.status >= 500;
  if (!retryable || b.attempts >= options_.max_attempts) {
    ++stats_.failed;
    queue_.pop_front();
    return true;
  }
  backoff_ = backoff_.count() == 0 ? options_.backoff_initial
                                   : std::min(backoff_ * 2, options_.backoff_max);
  retry_at_ = steady::now() + backoff_;
  return false;
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
  // The budget counts from here: a request in flight when finish() was called has had its own
  // deadline, and the last batch (the run's final totals) still gets its chance.
  const mono_time deadline = steady::now() + finish_budget_;
  lock.unlock();

  // The end: one last batch (the run's final totals), then as much of the queue as the budget
  // allows, retrying without waiting past it.
  collect();
  while (!queue_.empty()) {
    const mono_time now = steady::now();
    if (now >= deadline) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    if (left.count() <= 0) break;
    if (!send_front(std::min(options_.timeout, left)))
      std::this_thread::sleep_until(std::min(retry_at_, deadline));
  }
  lock.lock();
  stats_.dropped += queue_.size();
  queue_.clear();
}

}  // namespace joules::exporter
