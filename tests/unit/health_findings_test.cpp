#include "backends/nvml/nvml_decode.hpp"
#include "health/findings.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace joules::health {
namespace {

device_info gpu(unsigned index = 3) {
  device_info d;
  d.index = index;
  d.name = "NVIDIA H100 80GB HBM3";
  d.power_limit = watts{700};
  d.default_power_limit = watts{700};
  return d;
}

// A reading of a healthy, busy H100.
health_reading healthy() {
  health_reading h;
  h.gpu_util_percent = 95;
  h.ecc_enabled = true;
  h.ecc_uncorrected_volatile = 0;
  h.ecc_uncorrected_aggregate = 0;
  h.ecc_corrected_volatile = 0;
  h.remap_pending = false;
  h.remap_failure = false;
  h.remapped_rows_corrected = 0;
  h.remapped_rows_uncorrected = 0;
  h.pcie_generation = 5;
  h.pcie_max_generation = 5;
  h.pcie_width = 16;
  h.pcie_max_width = 16;
  h.persistence_mode = true;
  h.power_limit_w = 700;
  h.default_power_limit_w = 700;
  h.temperature_c = 60;
  h.slowdown_temperature_c = 89;
  h.throttle = nvml::decode_clock_events(0x4);  // power cap: normal under load
  return h;
}

const finding* find(const std::vector<finding>& fs, const std::string& code) {
  auto it = std::find_if(fs.begin(), fs.end(), [&](const finding& f) { return f.code == code; });
  return it == fs.end() ? nullptr : &*it;
}

void expect_one(const health_reading& h, const std::string& code, severity level, int status) {
  const auto fs = health_findings(gpu(), h);
  const finding* f = find(fs, code);
  ASSERT_NE(f, nullptr) << code;
  EXPECT_EQ(f->level, level) << code;
  EXPECT_EQ(f->gpu, 3U);
  EXPECT_EQ(f->message.rfind("GPU 3: ", 0), 0U) << f->message;
  if (level != severity::info) {
    EXPECT_FALSE(f->fix.empty()) << code;
    EXPECT_FALSE(f->flag.empty()) << code;
  }
  EXPECT_EQ(exit_status(fs), status) << code;
}

TEST(HealthFindings, XidsBySeverity) {
  auto h = healthy();
  h.xid_known = true;
  EXPECT_TRUE(health_findings(gpu(), h).empty());  // watching, none seen

  h.xid_counts = {{13, 3}};
  h.last_xid = 13;
  expect_one(h, "xid", severity::warning, kWarnings);
  const auto fs = health_findings(gpu(), h);
  EXPECT_NE(fs.front().message.find("XID 13 (Graphics Engine Exception) reported 3 times"),
            std::string::npos)
      << fs.front().message;
  EXPECT_EQ(fs.front().flag, "XID 13");

  for (unsigned critical : {48U, 62U, 64U, 74U, 79U, 94U, 95U, 119U, 120U}) {
    h.xid_counts = {{13, 1}, {critical, 1}};
    h.last_xid = critical;
    expect_one(h, "xid_critical", severity::critical, kUnhealthy);
  }
  // A number the table does not list is a warning, named by its number alone.
  h.xid_counts = {{154, 1}};
  h.last_xid = 154;
  expect_one(h, "xid", severity::warning, kWarnings);
  EXPECT_NE(health_findings(gpu(), h).front().message.find("XID 154 reported 1 time"),
            std::string::npos);
}

TEST(HealthFindings, NvlinkDownAndErrorsThatGrow) {
  auto h = healthy();
  h.nvlink_links = {{0, true}, {1, true}, {2, true}};
  h.nvlink_crc_flit_errors = 0;
  h.nvlink_replay_errors = 0;
  h.nvlink_errors_rising = false;
  EXPECT_TRUE(health_findings(gpu(), h).empty());

  h.nvlink_links[1].active = false;
  expect_one(h, "nvlink_down", severity::warning, kWarnings);
  EXPECT_NE(health_findings(gpu(), h).front().message.find("NVLink 1 is down"), std::string::npos);

  // Errors counted before joules watched are worth knowing; errors that grow are a warning.
  h = healthy();
  h.nvlink_crc_flit_errors = 12;
  h.nvlink_errors_rising = false;
  expect_one(h, "nvlink_errors", severity::info, kHealthy);
  h.nvlink_errors_rising = true;
  expect_one(h, "nvlink_errors_rising", severity::warning, kWarnings);
  EXPECT_EQ(find(health_findings(gpu(), h), "nvlink_errors"), nullptr);

  // Where each link's counts were read, the message names the links the errors are on.
  h.nvlink_links = {{0, true}, {1, true}, {2, true}};
  h.nvlink_links[0].crc_flit_errors = 0;
  h.nvlink_links[2].crc_flit_errors = 10;
  h.nvlink_links[2].replay_errors = 2;
  const auto findings = health_findings(gpu(), h);
  const auto* rising = find(findings, "nvlink_errors_rising");
  ASSERT_NE(rising, nullptr);
  EXPECT_NE(rising->message.find("on link 2 (12)"), std::string::npos) << rising->message;
  EXPECT_EQ(rising->message.find("link 0"), std::string::npos) << rising->message;
}

TEST(HealthFindings, AHealthyBusyGpuHasNone) {
  const auto fs = health_findings(gpu(), healthy());
  EXPECT_TRUE(fs.empty()) << fs.front().code;
  EXPECT_EQ(exit_status(fs), kHealthy);
  EXPECT_EQ(status_name(kHealthy), "healthy");
}

TEST(HealthFindings, EachConditionWithItsSeverity) {
  auto h = healthy();
  h.ecc_uncorrected_volatile = 2;
  h.ecc_uncorrected_aggregate = 2;
  expect_one(h, "ecc_uncorrectable", severity::critical, kUnhealthy);
  EXPECT_EQ(find(health_findings(gpu(), h), "ecc_uncorrectable_lifetime"), nullptr);

  h = healthy();
  h.ecc_uncorrected_aggregate = 5;
  expect_one(h, "ecc_uncorrectable_lifetime", severity::warning, kWarnings);

  h = healthy();
  h.retirement_pending = true;
  expect_one(h, "retirement_pending", severity::critical, kUnhealthy);

  h = healthy();
  h.remap_pending = true;
  expect_one(h, "remap_pending", severity::critical, kUnhealthy);

  h = healthy();
  h.remap_failure = true;
  expect_one(h, "remap_failure", severity::critical, kUnhealthy);

  h = healthy();
  h.throttle = nvml::decode_clock_events(0x40);
  expect_one(h, "hw_thermal_slowdown", severity::critical, kUnhealthy);
  h.throttle = nvml::decode_clock_events(0x8);
  expect_one(h, "hw_slowdown", severity::critical, kUnhealthy);
  h.throttle = nvml::decode_clock_events(0x80);
  expect_one(h, "hw_power_brake", severity::critical, kUnhealthy);
  h.throttle = nvml::decode_clock_events(0x20);
  expect_one(h, "sw_thermal_slowdown", severity::warning, kWarnings);

  h = healthy();
  h.pcie_width = 8;
  expect_one(h, "pcie_width_degraded", severity::warning, kWarnings);

  h = healthy();
  h.pcie_generation = 3;
  expect_one(h, "pcie_generation_degraded", severity::warning, kWarnings);

  h = healthy();
  h.power_limit_w = 500;
  expect_one(h, "power_limit_below_default", severity::warning, kWarnings);

  h = healthy();
  h.persistence_mode = false;
  expect_one(h, "persistence_off", severity::warning, kWarnings);

  h = healthy();
  h.temperature_c = 90;
  expect_one(h, "temperature_high", severity::warning, kWarnings);
}

TEST(HealthFindings, InformationDoesNotChangeTheExitStatus) {
  auto h = healthy();
  h.ecc_corrected_volatile = 12;
  h.remapped_rows_uncorrected = 1;
  h.pcie_replays = 4;
  h.retired_pages_double_bit = 2;
  expect_one(h, "ecc_corrected", severity::info, kHealthy);
  expect_one(h, "remapped_rows", severity::info, kHealthy);
  expect_one(h, "pcie_replays", severity::info, kHealthy);
  expect_one(h, "retired_pages", severity::info, kHealthy);
}

TEST(HealthFindings, AnIdleLinkMaySlowDown) {
  auto h = healthy();
  h.pcie_generation = 1;
  h.gpu_util_percent = 0;
  h.throttle = nvml::decode_clock_events(0x1);
  expect_one(h, "pcie_generation_idle", severity::info, kHealthy);
}

TEST(HealthFindings, UnknownIsNotAProblem) {
  // An old driver answers nothing: no finding from absence.
  EXPECT_TRUE(health_findings(gpu(), health_reading{}).empty());
  // The power limit falls back to the one probed at open.
  device_info d = gpu();
  d.power_limit = watts{300};
  const auto fs = health_findings(d, health_reading{});
  ASSERT_EQ(fs.size(), 1U);
  EXPECT_EQ(fs[0].code, "power_limit_below_default");
}

TEST(HealthFindings, ALostGpuIsCriticalAndNothingElse) {
  auto h = healthy();
  h.persistence_mode = false;
  const auto fs = health_findings(gpu(), h, /*lost=*/true);
  ASSERT_EQ(fs.size(), 1U);
  EXPECT_EQ(fs[0].code, "gpu_lost");
  EXPECT_EQ(exit_status(fs), kUnhealthy);
}

TEST(HealthFindings, ExitStatusIsTheWorstSeverity) {
  std::vector<finding> fs(3);
  fs[0].level = severity::info;
  fs[1].level = severity::warning;
  EXPECT_EQ(exit_status(fs), kWarnings);
  fs[2].level = severity::critical;
  EXPECT_EQ(exit_status(fs), kUnhealthy);
  EXPECT_EQ(status_name(kUnhealthy), "unhealthy");
  EXPECT_EQ(status_name(kWarnings), "warnings");
}

}  // namespace
}  // namespace joules::health
