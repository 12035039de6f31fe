// The clocks the sampler waits on: the fake one the sampler's tests run in, and the real one.
#include "fake_clock.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace joules::testing {
namespace {

using std::chrono::milliseconds;

const mono_time kStart = mono_time(std::chrono::seconds(50));

// A thread waiting on `clock` the way the sampler does: its own mutex, condition variable and
// wake condition.
struct waiter {
  std::mutex mu;
  std::condition_variable cv;
  bool wake = false;  // guarded by mu
  std::atomic<int> result{-1};
  std::jthread thread;

  void wait(sampler_clock& clock, mono_time deadline) {
    thread = std::jthread([this, &clock, deadline] {
      std::unique_lock lock(mu);
      result = clock.wait_until(lock, cv, deadline, [this] { return wake; }) ? 1 : 0;
    });
  }
  void wake_up() {
    {
      std::lock_guard lock(mu);
      wake = true;
    }
    cv.notify_all();
  }
};

TEST(SamplerFakeClock, AWaitReturnsWhenVirtualTimeReachesItsDeadlineAndNotBefore) {
  fake_clock clock(kStart);
  waiter w;
  w.wait(clock, kStart + milliseconds(10));
  ASSERT_TRUE(clock.wait_idle());
  EXPECT_EQ(clock.next_deadline(), kStart + milliseconds(10));
  clock.advance_to(kStart + milliseconds(10) - std::chrono::nanoseconds(1));
  ASSERT_TRUE(clock.wait_idle());  // still waiting: not due yet
  EXPECT_EQ(w.result, -1);
  clock.advance_to(kStart + milliseconds(10));
  w.thread.join();
  EXPECT_EQ(w.result, 0);  // timed out
  EXPECT_EQ(clock.now(), kStart + milliseconds(10));
  EXPECT_EQ(clock.next_deadline(), std::nullopt);
  EXPECT_EQ(clock.waits_done(), 1U);
}

TEST(SamplerFakeClock, AWaitWokenByItsConditionReturnsAtOnceWithoutTimeMoving) {
  fake_clock clock(kStart);
  waiter w;
  w.wait(clock, kStart + std::chrono::hours(1));
  ASSERT_TRUE(clock.wait_idle());
  w.wake_up();
  w.thread.join();
  EXPECT_EQ(w.result, 1);
  EXPECT_EQ(clock.now(), kStart);
}

TEST(SamplerFakeClock, AWaiterWhoseConditionHoldsIsNotIdle) {
  // The condition is made true before the waiter has been notified: wait_idle() must see that
  // it can go on (it judges by the condition itself), and with a stop already requested it then
  // gives up instead of waiting for the waiter to settle.
  fake_clock clock(kStart);
  waiter w;
  w.wait(clock, kStart + std::chrono::hours(1));
  ASSERT_TRUE(clock.wait_idle());
  {
    std::lock_guard lock(w.mu);
    w.wake = true;
  }
  std::stop_source stop;
  stop.request_stop();
  EXPECT_FALSE(clock.wait_idle(1, stop.get_token()));
  w.cv.notify_all();
  w.thread.join();
  EXPECT_EQ(w.result, 1);
}

TEST(SamplerFakeClock, RunUntilStepsFromDeadlineToDeadlineAndWaitsForTheThreadAtEach) {
  // A thread that waits 10 ms at a time, taking 3 ms of virtual time between waits (advancing
  // the clock itself, as a slow read does): it runs on its own grid, at the instants it asks.
  fake_clock clock(kStart);
  std::mutex mu;
  std::condition_variable cv;
  std::vector<mono_time> woke;
  std::atomic<bool> done{false};
  std::jthread t([&] {
    mono_time next = kStart;
    std::unique_lock lock(mu);
    while (!done) {
      next += milliseconds(10);
      clock.wait_until(lock, cv, next, [&] { return done.load(); });
      woke.push_back(clock.now());
      lock.unlock();
      clock.advance_by(milliseconds(3));
      lock.lock();
    }
  });
  clock.run_until(kStart + milliseconds(45));
  EXPECT_EQ(clock.now(), kStart + milliseconds(45));
  {
    std::lock_guard lock(mu);
    ASSERT_EQ(woke.size(), 4U);
    for (std::size_t i = 0; i < woke.size(); ++i)
      EXPECT_EQ(woke[i], kStart + milliseconds(10 * (i + 1)));
    done = true;
  }
  cv.notify_all();
}

TEST(SamplerSteadyClock, AWaitThatIsDueOrWokenReturnsAtOnce) {
  sampler_clock& clock = sampler_clock::steady();
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock lock(mu);
  const mono_time before = clock.now();
  EXPECT_FALSE(clock.wait_until(lock, cv, before - milliseconds(1), [] { return false; }));
  EXPECT_TRUE(clock.wait_until(lock, cv, before + std::chrono::hours(1), [] { return true; }));
  EXPECT_GE(clock.now(), before);
  EXPECT_EQ(&sampler_clock::steady(), &clock);
}

}  // namespace
}  // namespace joules::testing
