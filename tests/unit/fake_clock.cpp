#include "fake_clock.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace joules::testing {

fake_clock::fake_clock(mono_time start) : now_ns_(start.time_since_epoch().count()) {}

bool fake_clock::wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                            mono_time deadline, wake_condition woken) {
  waiter w{lock.mutex(), &cv, deadline, &woken};
  {
    std::lock_guard guard(mu_);
    waiters_.push_back(&w);
    ++generation_;
  }
  changed_.notify_all();
  bool result = false;
  while (true) {
    if (woken()) {
      result = true;
      break;
    }
    if (now() >= deadline) break;
    cv.wait(lock);
  }
  {
    std::lock_guard guard(mu_);
    std::erase(waiters_, &w);
    ++generation_;
    ++waits_done_;
  }
  changed_.notify_all();
  return result;
}

bool fake_clock::wait_idle(std::size_t threads, std::stop_token stop) {
  std::unique_lock guard(mu_);
  while (true) {
    const std::uint64_t seen = generation_;
    if (waiters_.size() == threads && threads > 0) {
      std::mutex* m = waiters_.front()->mutex;
      if (std::any_of(waiters_.begin(), waiters_.end(),
                      [m](const waiter* w) { return w->mutex != m; })) {
        throw std::logic_error("fake_clock: waiters on different mutexes");
      }
      // Lock order: the waiters' mutex, then ours, as a waiter registering.
      guard.unlock();
      std::unique_lock waiters_lock(*m);
      guard.lock();
      if (generation_ == seen && std::all_of(waiters_.begin(), waiters_.end(),
                                             [this](const waiter* w) { return blocked(*w); })) {
        return true;
      }
    }
    if (!changed_.wait_for(guard, stop, kStuck, [&] { return generation_ != seen; })) {
      if (stop.stop_requested()) return false;
      throw std::runtime_error("fake_clock: the waiting threads did not settle");
    }
  }
}

void fake_clock::advance_to(mono_time t) {
  std::vector<std::pair<std::mutex*, std::condition_variable*>> due;
  {
    std::lock_guard guard(mu_);
    if (t <= now()) return;
    now_ns_.store(t.time_since_epoch().count(), std::memory_order_release);
    ++generation_;
    for (const waiter* w : waiters_)
      if (w->deadline <= t) due.emplace_back(w->mutex, w->cv);
  }
  changed_.notify_all();
  for (auto [m, cv] : due) {
    // Between its check of the time and its wait a waiter holds its lock: taking it here puts
    // this notification after the wait has begun.
    { std::lock_guard waiters_lock(*m); }
    cv->notify_all();
  }
}

void fake_clock::run_until(mono_time t, std::size_t threads) {
  while (true) {
    wait_idle(threads);
    const auto next = next_deadline();
    if (!next || *next > t) break;
    advance_to(*next);
  }
  advance_to(t);
}

std::optional<mono_time> fake_clock::next_deadline() const {
  std::lock_guard guard(mu_);
  std::optional<mono_time> out;
  for (const waiter* w : waiters_)
    if (!out || w->deadline < *out) out = w->deadline;
  return out;
}

std::uint64_t fake_clock::waits_done() const {
  std::lock_guard guard(mu_);
  return waits_done_;
}

}  // namespace joules::testing
