#pragma once
// The sampler's time: the instant now, and waiting for an instant while still waking when the
// sampler's condition holds (a boundary, finish(), stop()).  The sampler asks nothing else about
// time, so a test can run it in virtual time (tests/unit/fake_clock.hpp) and check its schedule
// and its energy to the nanosecond, without sleeping.
//
// The real clock is steady_clock (CLOCK_MONOTONIC, util/clock.hpp) with the sampler's condition
// variable.  The sampler stamps every device read with now(), so it calls the real clock's now()
// directly rather than through the interface: a tick then costs one virtual call, the wait.
//
// Thread-safety: now() from any thread; wait_until() from any thread, with `lock` held.

#include <condition_variable>
#include <mutex>
#include <type_traits>

#include "util/clock.hpp"

namespace joules {

// A condition to wake on, by reference: a callable that lives as long as the wait (usually a
// lambda in the waiter's own frame).  No allocation, unlike std::function, whose small buffer
// holds no more than two captured pointers.
class wake_condition {
 public:
  template <class F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, wake_condition> &&
           std::is_invocable_r_v<bool, const F&>)
      wake_condition(const F& f)  // implicit: a lambda converts at the call
      : object_(&f), call_([](const void* o) { return (*static_cast<const F*>(o))(); }) {}

  bool operator()() const { return call_(object_); }

 private:
  const void* object_;
  bool (*call_)(const void*);
};

class sampler_clock {
 public:
  virtual ~sampler_clock() = default;

  virtual mono_time now() const = 0;

  // Waits on `cv`, with `lock` held on its mutex, until `deadline` or until `woken()` holds,
  // whichever comes first; `woken` is evaluated with the lock held, and whoever makes it true
  // notifies `cv` under that mutex.  Returns woken(), as std::condition_variable::wait_until
  // with a predicate does.
  virtual bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                          mono_time deadline, wake_condition woken) = 0;

  // The real clock, shared by every sampler that is given no other.
  static sampler_clock& steady();
};

class steady_sampler_clock final : public sampler_clock {
 public:
  mono_time now() const override { return steady::now(); }
  bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                  mono_time deadline, wake_condition woken) override {
    return cv.wait_until(lock, deadline, woken);
  }
};

inline sampler_clock& sampler_clock::steady() {
  // Never destroyed: a sampler thread abandoned in a hung driver call may outlive static
  // destruction at exit.
  static steady_sampler_clock* const clock = new steady_sampler_clock();
  return *clock;
}

}  // namespace joules
