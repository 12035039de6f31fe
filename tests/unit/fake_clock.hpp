#pragma once
// Deterministic virtual time for the sampler's unit tests.  Time stands still until the test
// moves it; a wait on this clock returns when virtual time reaches its deadline or its wake
// condition holds, as on the real clock.  The test can wait until every thread that waits on the
// clock is blocked again ("idle": each waits for a later instant and its condition does not
// hold), so each step of the sampler happens at a known virtual instant, whatever the machine's
// speed, and no test sleeps.
//
// How a step stays deterministic: a waiter registers (under the fake's mutex) while it holds its
// own lock, and stays registered until it returns.  wait_idle() then takes the waiters' lock
// itself: holding it, every registered waiter is inside its condition-variable wait, and its wake
// condition and deadline say whether it will move.  Whoever changes a waiter's condition notifies
// its condition variable (the sampler's rule); advance_to() notifies those whose deadline it
// reaches, after taking their lock, so that no wake-up is lost between a waiter's check and its
// wait.
//
// Every waiter must use the same mutex (one sampler's): idleness is judged under it.
// Thread-safety: every member may be called from any thread; advance_to() and wait_idle() take
// the waiters' mutex, so not with it held.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <stop_token>
#include <vector>

#include "sampler/sampler_clock.hpp"

namespace joules::testing {

class fake_clock final : public sampler_clock {
 public:
  explicit fake_clock(mono_time start);

  mono_time now() const override {
    return mono_time(mono_time::duration(now_ns_.load(std::memory_order_acquire)));
  }
  bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                  mono_time deadline, wake_condition woken) override;

  // Waits until exactly `threads` threads wait on this clock and all of them are blocked.
  // Returns false when `stop` is requested first.  Throws std::runtime_error when nothing
  // changes for kStuck of real time (a broken test fails rather than hangs).
  bool wait_idle(std::size_t threads = 1, std::stop_token stop = {});

  // Moves virtual time forward to t (never back) and wakes the waits that become due.  Returns
  // at once.  Any thread, the waiters' own included (a read that takes time: scripted_backend).
  void advance_to(mono_time t);
  void advance_by(std::chrono::nanoseconds d) { advance_to(now() + d); }

  // Moves virtual time to t from deadline to deadline: at each, waits until `threads` threads
  // are blocked again first.  On return every event up to t has happened and the threads are
  // blocked.
  void run_until(mono_time t, std::size_t threads = 1);

  // The earliest deadline waited for; nullopt when nobody waits.
  std::optional<mono_time> next_deadline() const;

  // Waits that have returned so far.
  std::uint64_t waits_done() const;

  static constexpr std::chrono::seconds kStuck{30};

 private:
  struct waiter {
    std::mutex* mutex;
    std::condition_variable* cv;
    mono_time deadline;
    const wake_condition* woken;
  };

  bool blocked(const waiter& w) const { return !(*w.woken)() && now() < w.deadline; }

  mutable std::mutex mu_;
  std::condition_variable_any changed_;  // waiters_ or virtual time changed
  std::vector<waiter*> waiters_;         // guarded by mu_
  std::uint64_t generation_ = 0;         // guarded by mu_; moves at every change
  std::uint64_t waits_done_ = 0;         // guarded by mu_
  std::atomic<mono_time::rep> now_ns_;   // written under mu_
};

}  // namespace joules::testing
