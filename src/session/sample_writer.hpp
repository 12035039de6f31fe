#pragma once
// Writes `sample` records (record/sample_records.hpp) during a run: a small thread reads the
// sampler's published snapshots (never the hardware: only the sampler thread does) at half the
// sampling interval, so it sees every reading, folds them into buckets and writes each bucket's
// record as it closes.  The sampler is not slowed: a snapshot is a shared pointer taken under a
// mutex.
//
// Thread-safety: start() and finish() from the session's thread; the records go through the
// sink, whose write() is thread-safe.

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stop_token>
#include <thread>

#include "record/jsonl_sink.hpp"
#include "record/sample_records.hpp"
#include "sampler/sampler.hpp"

namespace joules::session {

class sample_writer {
 public:
  // `ctx` must have its start set (measurement::begin) before start(); all must outlive this.
  sample_writer(const joules::sampler& sampler, const run_context& ctx, jsonl_sink& sink,
                std::chrono::milliseconds bucket);
  ~sample_writer();
  sample_writer(const sample_writer&) = delete;
  sample_writer& operator=(const sample_writer&) = delete;

  void start();
  // The run ended at `end` and the sampler has taken its last readings: the last readings are
  // folded in, the bucket under way is written, and the thread stops.
  void finish(mono_time end);

 private:
  void take_snapshot(std::optional<double> end_s = std::nullopt);
  void loop(std::stop_token stop);

  const joules::sampler& sampler_;
  jsonl_sink& sink_;
  sample_buckets buckets_;
  std::chrono::microseconds poll_;
  std::mutex mu_;  // guards buckets_ and last_: the thread and finish() both fold readings
  std::shared_ptr<const sampler_snapshot> last_;
  std::jthread thread_;
};

}  // namespace joules::session
