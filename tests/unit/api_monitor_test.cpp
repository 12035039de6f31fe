// The library's monitor (session/api_monitor.hpp) on the simulated backend: what it holds.
#include "session/api_monitor.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace joules::session {
namespace {

api_settings two_sim_gpus() {
  api_settings s;
  s.backend.name = "sim";
  s.backend.sim.gpus = 2;
  s.backend.sim.profile = "0.5";
  s.backend.components.cpu = false;
  s.backend.components.dram = false;
  s.gpus = "all";
  return s;
}

TEST(ApiMonitor, WindowsAndInstantsAreHeldOnlyAsLongAsTheyAreNeeded) {
  api_monitor m(two_sim_gpus());
  std::vector<api_window_id> ids;
  for (int i = 0; i < 2000; ++i) {
    m.begin("w");
    ids.push_back(m.end("w"));
  }
  EXPECT_EQ(m.windows_held(), 2000U);
  for (const auto id : ids) {
    const auto n = m.result(id, std::chrono::seconds(10));
    ASSERT_TRUE(n.final);
    ASSERT_EQ(n.devices.size(), 2U);
    EXPECT_GE(n.end_s, n.begin_s);
    m.release(id);
  }
  // Every instant placed, every window released: nothing left but the opening.
  EXPECT_EQ(m.windows_held(), 0U);
  EXPECT_EQ(m.instants_waiting(), 0U);
  EXPECT_THROW(m.release(ids.front()), api_error);
  EXPECT_TRUE(m.close());
}

TEST(ApiMonitor, ErrorsCarryTheirKind) {
  api_monitor m(two_sim_gpus());
  m.begin("a");
  try {
    m.begin("a");
    FAIL() << "a second open window of the same name";
  } catch (const api_error& e) {
    EXPECT_EQ(e.code(), api_errc::state);
  }
  try {
    m.end("b");
    FAIL() << "ended a window never begun";
  } catch (const api_error& e) {
    EXPECT_EQ(e.code(), api_errc::not_found);
  }
  EXPECT_TRUE(m.close());
  EXPECT_THROW(m.begin("c"), api_error);
}

TEST(ApiMonitor, SimulatedGpusHaveNoPlacementError) {
  api_monitor m(two_sim_gpus());
  m.begin("w");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto n = m.result(m.end("w"), std::nullopt);
  ASSERT_TRUE(n.final);
  for (const auto& d : n.devices) {
    EXPECT_EQ(d.method, energy_method::simulated);
    EXPECT_EQ(d.error_j, 0.0);
    // 70 W idle + half of 630 W: 385 W.
    EXPECT_NEAR(d.energy_j.value() / (n.end_s - n.begin_s), 385.0, 385.0 * 0.02);
  }
  EXPECT_TRUE(m.close());
}

}  // namespace
}  // namespace joules::session
