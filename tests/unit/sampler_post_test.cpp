// Control tasks on the sampler's thread (sampler::post): run before sampling starts and between
// two readings while it samples, on the thread that reads the devices, without moving the
// readings off their grid; dropped with a broken promise once the sampler has stopped.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "sampler_harness.hpp"

namespace joules::testing {
namespace {

TEST(SamplerPost, ATaskRunsOnTheSamplerThreadBetweenReadingsAndTheGridStays) {
  scripted_device d = stepped_gpu(0, 0.0, 0.0);
  d.info.has_energy_counter = false;  // power only: no start burst, only the grid
  sampler_harness h({d});
  auto before = h.sampler().post([](backend& b) {
    (void)b;
    return std::this_thread::get_id();
  });
  ASSERT_EQ(before.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  const auto sampler_thread = before.get();
  EXPECT_NE(sampler_thread, std::this_thread::get_id());

  h.start();
  h.run_until(0.35);
  const std::size_t reads_before = h.truth().read_times(0).size();
  // While sampling: the task runs at once, between readings, at this virtual instant.
  auto during = h.sampler().post(
      [](backend& b) { return std::make_pair(std::this_thread::get_id(), b.devices().size()); });
  ASSERT_EQ(during.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  const auto [thread, devices] = during.get();
  EXPECT_EQ(thread, sampler_thread);
  EXPECT_EQ(devices, 1U);
  EXPECT_EQ(h.truth().read_times(0).size(), reads_before);  // no reading of its own
  h.run_until(1.0);
  const auto reads = h.truth().read_times(0);
  // The grid from the first reading: 0, 0.1, ..., 1.0, untouched by the task.
  ASSERT_EQ(reads.size(), 11U);
  for (std::size_t i = 0; i < reads.size(); ++i)
    EXPECT_NEAR(reads[i], 0.1 * static_cast<double>(i), kNs) << i;
}

TEST(SamplerPost, AnExceptionComesBackThroughTheFuture) {
  sampler_harness h({stepped_gpu(0, 0.0, 0.0)});
  auto f = h.sampler().post([](backend&) -> int { throw std::runtime_error("no"); });
  ASSERT_EQ(f.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_THROW(f.get(), std::runtime_error);
}

TEST(SamplerPost, AfterTheSamplerStoppedATaskIsDroppedNotRun) {
  bool ran = false;
  std::future<int> late;
  {
    sampler_harness h({stepped_gpu(0, 0.0, 0.0)});
    h.start();
    h.run_until(0.2);
    ASSERT_TRUE(h.sampler().stop(std::chrono::milliseconds(1000)));
    late = h.sampler().post([&ran](backend&) {
      ran = true;
      return 1;
    });
  }
  ASSERT_EQ(late.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  try {
    late.get();
    FAIL() << "a task after stop() ran";
  } catch (const std::future_error& e) {
    EXPECT_EQ(e.code(), std::future_errc::broken_promise);
  }
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace joules::testing
