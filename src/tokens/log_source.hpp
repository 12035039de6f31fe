#pragma once
// A token source fed by a server's log lines (`wrap` of a server without --tokens-from): the
// wrap loop hands each line's tokens over with the instant it arrived, without waiting; a thread
// of this source reads the GPUs' energy at those instants once the history has it
// (log_model in source_model.hpp does the rest).  Counts from logs are estimates.
//
// Thread-safety: push() from the wrap loop, start() and finish() from the session's thread.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "tokens/scrape_source.hpp"

namespace joules::tokens {

class log_source {
 public:
  log_source(source_identity id, std::vector<std::size_t> devices, const energy_history& energy,
             board& out, std::size_t slot, source_hooks hooks, std::chrono::milliseconds period,
             std::chrono::milliseconds energy_wait);
  ~log_source();
  log_source(const log_source&) = delete;
  log_source& operator=(const log_source&) = delete;

  // The server started at `t`: nothing before its first line is attributed.
  void start(mono_time t);
  // A line's tokens, stamped with its arrival (never blocks on the energy).
  void push(mono_time t, const log_tokens& tokens);
  // The run ended at `end`: the lines queued are taken, the source closed, the thread ends
  // (within `budget` of waiting for the energy).
  void finish(mono_time end, std::chrono::milliseconds budget);

 private:
  void run(const std::stop_token& stop);
  std::optional<double> energy_at(double t_s, const std::stop_token& stop) const;

  std::vector<std::size_t> devices_;
  const energy_history& energy_;
  board& board_;
  std::size_t slot_;
  source_hooks hooks_;
  std::chrono::milliseconds period_;
  std::chrono::milliseconds energy_wait_;
  std::optional<log_model> model_;
  source_identity id_;

  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::deque<std::pair<double, log_tokens>> queue_;  // guarded by mu_
  std::optional<double> end_s_;                      // guarded by mu_
  mono_time energy_deadline_ = mono_time::max();     // guarded by mu_
  std::jthread thread_;
};

}  // namespace joules::tokens
