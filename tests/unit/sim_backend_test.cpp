#include "backends/sim/sim_backend.hpp"

#include <gtest/gtest.h>

#include "util/error.hpp"

namespace joules {
namespace {

TEST(SimProfile, IntegralIsTheIntegralOfUtilisation) {
  for (const char* spec : {"train", "idle", "0.37"}) {
    const sim_profile p(spec);
    for (unsigned gpu : {0U, 1U, 2U}) {
      double numeric = 0.0;
      const double dt = 1e-4;
      for (double t = 0.0; t < 10.0 - dt / 2; t += dt)
        numeric += p.utilisation(gpu, t + dt / 2) * dt;
      EXPECT_NEAR(p.integral(gpu, 10.0), numeric, 1e-3) << spec << " gpu " << gpu;
    }
  }
}

TEST(SimProfile, RejectsUnknownProfiles) {
  EXPECT_THROW(sim_profile("1.5"), usage_error);
  EXPECT_THROW(sim_profile("busy"), usage_error);
}

TEST(SimBackend, DevicesAreMarkedSimulatedAndReadingsAreConsistent) {
  sim_options o;
  o.gpus = 3;
  o.profile = "0.5";
  auto b = open_sim_backend(o);
  ASSERT_EQ(b->devices().size(), 3U);
  for (const auto& d : b->devices()) {
    EXPECT_TRUE(d.simulated);
    EXPECT_EQ(d.method(), energy_method::simulated);
    EXPECT_EQ(d.name, "NVIDIA H100 80GB HBM3");
  }
  const auto r = b->read(0, read_what::all);
  ASSERT_TRUE(r.power);
  EXPECT_DOUBLE_EQ(r.power->value, 70.0 + 630.0 * 0.5);  // idle is 10 % of the 700 W TDP
  EXPECT_TRUE(r.energy_mj);
}

TEST(SimBackend, UnknownModelNeedsATdp) {
  sim_options o;
  o.model = "my-asic";
  EXPECT_THROW(open_sim_backend(o), usage_error);
  o.tdp_w = 250.0;
  EXPECT_EQ(open_sim_backend(o)->devices().front().name, "my-asic");
}

}  // namespace
}  // namespace joules
