#include "record/session_records.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <csignal>

namespace joules {
namespace {

run_context context() {
  run_context ctx;
  ctx.subcommand = "run";
  ctx.run_id = "r1";
  ctx.hostname = "node-1";
  ctx.labels = {{"team", "a\"b"}};
  ctx.command = {"python", "train.py"};
  ctx.backend.backend = "nvml";
  ctx.backend.driver_version = "570.86.15";
  device_info d;
  d.index = 3;
  d.uuid = "GPU-x";
  d.name = "NVIDIA H100 80GB HBM3";
  d.has_energy_counter = true;
  ctx.devices = {d, d};
  ctx.devices[1].index = 4;
  ctx.start_mono = mono_time(std::chrono::seconds(100));
  return ctx;
}

run_outcome outcome() {
  run_outcome o;
  o.end_mono = mono_time(std::chrono::seconds(110));
  o.window.energy_uj = 7'000'000'000;  // 7000 J
  o.window.peak_power_w = 800.0;
  o.window.ticks = 100;
  o.window.devices.resize(2);
  o.window.devices[0].energy_uj = 3'000'000'000;
  o.window.devices[1].energy_uj = 4'000'000'000;
  o.window.devices[0].method = o.window.devices[1].method = energy_method::counter;
  o.devices.resize(2);
  return o;
}

TEST(SessionRecords, EndRecordCarriesTotalsPerDeviceAndStatus) {
  const auto j = nlohmann::json::parse(session_end_record(context(), outcome()));
  EXPECT_EQ(j["type"], "session_end");
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["status"], "completed");
  EXPECT_EQ(j["energy_j"], 7000.0);
  EXPECT_NEAR(j["energy_wh"].get<double>(), 7000.0 / 3600.0, 1e-12);
  EXPECT_EQ(j["duration_s"], 10.0);
  EXPECT_EQ(j["avg_power_w"], 700.0);
  EXPECT_EQ(j["method"], "counter");
  EXPECT_EQ(j["labels"]["team"], "a\"b");
  EXPECT_EQ(j["devices"][1]["index"], 4);
  EXPECT_EQ(j["devices"][1]["energy_j"], 4000.0);
}

TEST(SessionRecords, StatusPrecedence) {
  auto ctx = context();
  auto o = outcome();
  o.devices[1].lost_at_s = 3.0;
  EXPECT_EQ(status_of(ctx, o), run_status::measurement_degraded);
  o.exit_status = 1;
  EXPECT_EQ(status_of(ctx, o), run_status::child_failed);
  o.exit_signal = SIGTERM;
  o.exit_status = 128 + SIGTERM;
  EXPECT_EQ(status_of(ctx, o), run_status::interrupted);
  const auto j = nlohmann::json::parse(session_end_record(ctx, o));
  EXPECT_EQ(j["degraded"], true);
  EXPECT_NE(j["degradations"][0].get<std::string>().find("GPU 4 stopped reporting"),
            std::string::npos);
}

TEST(SessionRecords, UnknownEnergyIsNullNotZero) {
  auto o = outcome();
  o.window.devices[1].energy_uj.reset();
  const auto j = nlohmann::json::parse(session_end_record(context(), o));
  EXPECT_TRUE(j["devices"][1]["energy_j"].is_null());
  EXPECT_EQ(j["status"], "measurement_degraded");
}

TEST(SessionRecords, SummaryLine) {
  const std::string s = summary_line(context(), outcome());
  EXPECT_EQ(s,
            "joules: 7000 J (1.94 Wh) in 10.00 s, avg 700 W, peak 800 W; 2x NVIDIA H100 80GB HBM3; "
            "counter, 100 samples");
}

}  // namespace
}  // namespace joules
