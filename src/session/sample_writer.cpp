#include "session/sample_writer.hpp"

#include <algorithm>

namespace joules::session {
namespace {

// Readings are looked at twice per sampling interval, so that no tick's snapshot is replaced
// before it was seen; at most this often.
constexpr std::chrono::microseconds kMinPoll{5000};

}  // namespace

sample_writer::sample_writer(const joules::sampler& sampler, const run_context& ctx,
                             jsonl_sink& sink, std::chrono::milliseconds bucket)
    : sampler_(sampler),
      sink_(sink),
      buckets_(ctx, bucket),
      poll_(std::max(kMinPoll, std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::duration<double>(sampler.interval_s() / 2.0)))) {}

sample_writer::~sample_writer() {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
}

void sample_writer::start() {
  thread_ = std::jthread([this](std::stop_token stop) { loop(stop); });
}

void sample_writer::take_snapshot(std::optional<double> end_s) {
  auto snap = sampler_.snapshot();
  if (!snap || snap == last_) return;
  last_ = snap;
  std::vector<sample_reading> readings(snap->devices.size());
  for (std::size_t k = 0; k < snap->devices.size(); ++k) {
    const auto& d = snap->devices[k];
    readings[k] = {d.power_w, d.energy_j, d.lost, d.health ? &*d.health : nullptr};
  }
  for (const auto& record : buckets_.add(monotonic_seconds(snap->taken), readings, end_s))
    sink_.write(record);
}

void sample_writer::loop(std::stop_token stop) {
  std::condition_variable_any cv;
  std::mutex wait_mu;
  std::unique_lock wait_lock(wait_mu);
  while (!stop.stop_requested()) {
    {
      std::lock_guard lock(mu_);
      take_snapshot();
    }
    cv.wait_for(wait_lock, stop, poll_, [] { return false; });
  }
}

void sample_writer::finish(mono_time end) {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
  std::lock_guard lock(mu_);
  take_snapshot(monotonic_seconds(end));
  for (const auto& record : buckets_.finish(monotonic_seconds(end)))
    sink_.write(record);
}

}  // namespace joules::session
