// RAPL through powercap: which zones are summed, wrap-around exact to the µJ, resets, the CPU
// estimate.  Fixture trees: tests/fixtures/powercap (README there).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "backend/backend.hpp"
#include "energy/accounting.hpp"
#include "energy/counter_track.hpp"
#include "rapl/cpu_backend.hpp"
#include "rapl/cpu_estimate.hpp"
#include "rapl/powercap.hpp"
#include "util/error.hpp"

namespace joules::rapl {
namespace {

const std::string kFixtures = std::string(JOULES_FIXTURES_DIR) + "/powercap";
constexpr std::uint64_t kIntelRange = 262143998865ULL;
constexpr std::uint64_t kAmdRange = 65535999716ULL;

std::vector<std::string> ids(const discovery& d, const std::vector<std::size_t>& zones) {
  std::vector<std::string> out;
  for (std::size_t i : zones)
    out.push_back(d.zones[i].id);
  return out;
}

TEST(Powercap, IntelTwoSocketsSumsPackagesAndDram) {
  const auto d = discover(kFixtures + "/intel-2s-dram");
  EXPECT_EQ(d.state, status::readable);
  EXPECT_EQ(ids(d, d.cpu), (std::vector<std::string>{"intel-rapl:0", "intel-rapl:1"}));
  EXPECT_EQ(ids(d, d.dram), (std::vector<std::string>{"intel-rapl:0:0", "intel-rapl:1:0"}));
  EXPECT_TRUE(d.left_out.empty());
  EXPECT_EQ(*d.zones[0].max_energy_range_uj, kIntelRange);
}

TEST(Powercap, AmdPackageWithoutItsCore) {
  const auto d = discover(kFixtures + "/amd-1p");
  EXPECT_EQ(d.state, status::readable);
  EXPECT_EQ(ids(d, d.cpu), (std::vector<std::string>{"intel-rapl:0"}));
  EXPECT_TRUE(d.dram.empty());
  ASSERT_EQ(d.left_out.size(), 1U);
  EXPECT_NE(d.left_out[0].find("intel-rapl:0:0 (core): part of package"), std::string::npos);
}

TEST(Powercap, PsysIsNeverAddedToPackagesNorCoreUncoreNorMmio) {
  const auto d = discover(kFixtures + "/laptop-psys");
  EXPECT_EQ(ids(d, d.cpu), (std::vector<std::string>{"intel-rapl:0"}));
  EXPECT_EQ(ids(d, d.dram), (std::vector<std::string>{"intel-rapl:0:2"}));
  std::string all;
  for (const auto& s : d.left_out)
    all += s + "\n";
  EXPECT_NE(all.find("intel-rapl:1 (psys): the whole platform"), std::string::npos) << all;
  EXPECT_NE(all.find("intel-rapl:0:0 (core)"), std::string::npos);
  EXPECT_NE(all.find("intel-rapl:0:1 (uncore)"), std::string::npos);
  EXPECT_NE(all.find("intel-rapl-mmio:0"), std::string::npos);
}

TEST(Powercap, PsysStandsForTheCpuWithoutPackages) {
  const auto d = discover(kFixtures + "/psys-only");
  EXPECT_EQ(ids(d, d.cpu), (std::vector<std::string>{"intel-rapl:0"}));
  EXPECT_EQ(d.zones[0].kind, domain::psys);
}

TEST(Powercap, NestedLayout) {
  const auto d = discover(kFixtures + "/nested");
  EXPECT_EQ(ids(d, d.cpu), (std::vector<std::string>{"intel-rapl:0"}));
  EXPECT_EQ(ids(d, d.dram), (std::vector<std::string>{"intel-rapl:0:0"}));
}

TEST(Powercap, AbsentIsToldApartFromNoZones) {
  const auto none = discover(kFixtures + "/does-not-exist");
  EXPECT_EQ(none.state, status::absent);
  EXPECT_NE(none.reason.find("a VM, or a container"), std::string::npos);
  const auto empty = discover(kFixtures + "/no-rapl");
  EXPECT_EQ(empty.state, status::absent);
  EXPECT_NE(empty.reason.find("no RAPL zones under"), std::string::npos);
  EXPECT_TRUE(empty.fix.empty());
}

TEST(Powercap, UnreadableCountersGiveTheFix) {
  if (geteuid() == 0) GTEST_SKIP() << "root reads mode-000 files; tests/cli covers it as nobody";
  const auto root =
      std::filesystem::temp_directory_path() / ("joules-rapl-" + std::to_string(getpid()));
  std::filesystem::remove_all(root);
  std::filesystem::copy(kFixtures + "/amd-1p", root, std::filesystem::copy_options::recursive);
  ::chmod((root / "intel-rapl:0/energy_uj").c_str(), 0);
  const auto d = discover(root.string());
  EXPECT_EQ(d.state, status::unreadable);
  EXPECT_TRUE(d.cpu.empty());
  EXPECT_NE(d.reason.find("readable by root only"), std::string::npos);
  EXPECT_NE(d.fix.find("sudo chmod a+r " + root.string() + "/intel-rapl:*/energy_uj"),
            std::string::npos);
  EXPECT_NE(d.fix.find("udev"), std::string::npos);
  std::filesystem::remove_all(root);
}

TEST(Powercap, WrapModulusIsTheRangePlusOneEnergyUnit) {
  // 2^32 units of 2^-14 J = 262143998926.26 µJ; of 2^-16 J = 65535999731.56 µJ.
  EXPECT_EQ(wrap_modulus_uj(kIntelRange), kIntelRange + 61);
  EXPECT_EQ(wrap_modulus_uj(kAmdRange), kAmdRange + 15);
  EXPECT_EQ(wrap_modulus_uj(1000), 1001U);  // no 32-bit unit visible: one µJ
  // Read at least every 65 s on Intel, 16 s on AMD (2 kW, a factor of two to spare).
  EXPECT_NEAR(max_read_interval_s(wrap_modulus_uj(kIntelRange)), 65.536, 1e-3);
  EXPECT_NEAR(max_read_interval_s(wrap_modulus_uj(kAmdRange)), 16.384, 1e-3);
}

TEST(CounterTrackWrap, WrapIsExactToTheMicrojoule) {
  counter_track c;
  const std::uint64_t m = wrap_modulus_uj(kIntelRange);
  c.set_wrap(m, kMaxPlausiblePowerW);
  c.set_continuous();
  const std::uint64_t start = kIntelRange - 5'000'000;  // 5 J before the top
  c.add_uj(0.0, start, std::nullopt);
  c.add_uj(0.1, kIntelRange - 1'000'001, std::nullopt);
  c.add_uj(0.2, 2'999'999, std::nullopt);  // wrapped
  c.add_uj(0.3, 3'000'123, std::nullopt);
  EXPECT_EQ(c.wraps(), 1);
  EXPECT_EQ(c.resets(), 0);
  const std::int64_t expected = static_cast<std::int64_t>(m - start + 3'000'123);
  EXPECT_EQ(std::llround(c.last_energy_j() * 1e6), expected);
  EXPECT_EQ(std::llround(*c.energy_at(0.3, std::nullopt) * 1e6), expected);
}

TEST(CounterTrackWrap, ADecreaseNoPowerCouldExplainIsAReset) {
  counter_track c;
  c.set_wrap(wrap_modulus_uj(kIntelRange), kMaxPlausiblePowerW);
  c.set_continuous();
  c.add_uj(0.0, 100'000'000'000ULL, std::nullopt);  // mid-range
  c.add_uj(0.1, 100'000'500'000ULL, std::nullopt);
  c.add_uj(0.2, 1'000'000, std::nullopt);  // someone wrote 0 to energy_uj
  EXPECT_EQ(c.wraps(), 0);
  EXPECT_EQ(c.resets(), 1);
}

TEST(CounterTrackWrap, AContinuousCounterIsFlatUpToItsLastUnchangedRead) {
  // A RAPL counter that did not move between reads used no energy: a boundary in that span gets
  // the unchanged value, exactly, not an interpolation towards the next change.
  counter_track c;
  c.set_continuous();
  c.add_uj(0.0, 1'000'000, std::nullopt);
  c.add_uj(0.1, 1'000'000, std::nullopt);
  c.add_uj(0.2, 1'000'000, std::nullopt);
  EXPECT_DOUBLE_EQ(*c.energy_at(0.15, std::nullopt), 0.0);
  c.add_uj(0.3, 9'000'000, std::nullopt);  // 8 J between 0.2 and 0.3
  EXPECT_DOUBLE_EQ(*c.energy_at(0.19, std::nullopt), 0.0);
  EXPECT_NEAR(*c.energy_at(0.25, std::nullopt), 4.0, 1e-9);
  EXPECT_DOUBLE_EQ(*c.energy_at(0.3, std::nullopt), 8.0);
  c.add_uj(0.4, 9'000'000, std::nullopt);
  EXPECT_DOUBLE_EQ(*c.energy_at(0.35, std::nullopt), 8.0);
  EXPECT_TRUE(c.covers(0.4));
}

TEST(CounterTrackWrap, WindowsOfAWrappingCounterAddUpExactly) {
  device_info info;
  info.kind = device_kind::cpu;
  info.has_energy_counter = true;
  info.counter_continuous = true;
  info.wrap = counter_wrap{wrap_modulus_uj(kAmdRange), watts{kMaxPlausiblePowerW}};
  accounting acc({info});
  auto read = [&](double t, std::uint64_t uj) {
    device_reading r;
    r.energy_uj = uj;
    acc.timeline(0).add(t, r);
    acc.add_tick({t, {std::nullopt}});
  };
  read(0.0, kAmdRange - 100);
  acc.push_boundary(0.05);
  read(0.1, kAmdRange - 100);
  read(0.2, 400);  // wrapped: 100 + 15 + 400 µJ
  acc.push_boundary(0.25);
  acc.push_boundary(0.29);  // before the read at 0.3 that still shows 400: nothing since 0.2
  read(0.3, 400);
  read(0.4, 1400);
  acc.resolve(/*final=*/true);
  const auto w = acc.take_finished();
  ASSERT_EQ(w.size(), 2U);
  EXPECT_EQ(*w[0].devices[0].energy_uj, 515);
  EXPECT_EQ(*w[1].devices[0].energy_uj, 0);
}

TEST(CpuEstimate, NamesNormaliseToTheTable) {
  EXPECT_EQ(normalise_cpu_name("Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz"), "intel xeon gold 6248");
  EXPECT_EQ(normalise_cpu_name("AMD EPYC 7763 64-Core Processor"), "amd epyc 7763");
  const auto xeon = lookup_tdp("Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz");
  ASSERT_TRUE(xeon);
  EXPECT_EQ(xeon->name, "Intel Xeon Gold 6248");
  EXPECT_EQ(xeon->tdp_w, 150.0);
  EXPECT_EQ(lookup_tdp("AMD EPYC 7763 64-Core Processor")->tdp_w, 280.0);
  EXPECT_EQ(lookup_tdp("AMD EPYC 9654 96-Core Processor")->name, "AMD EPYC 9654");  // not 9654P
  EXPECT_EQ(lookup_tdp("Intel(R) Core(TM) i7-8700K CPU @ 3.70GHz")->tdp_w, 95.0);
  EXPECT_FALSE(lookup_tdp("AMD EPYC"));  // a VM's generic name: no guess
  EXPECT_FALSE(lookup_tdp(""));
}

TEST(CpuEstimate, UtilisationFromProcStat) {
  const auto t0 = parse_cpu_times("cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 1 2 3 4\n");
  ASSERT_TRUE(t0);
  EXPECT_EQ(t0->busy, 200U);
  EXPECT_EQ(t0->total, 1000U);
  utilisation u;
  EXPECT_DOUBLE_EQ(u.update(*t0), 0.2);           // since boot, until a span is long enough
  EXPECT_DOUBLE_EQ(u.update({201, 1001}), 0.2);   // 1 tick: too short to say anything
  EXPECT_DOUBLE_EQ(u.update({275, 1100}), 0.75);  // 75 busy of 100
  EXPECT_DOUBLE_EQ(estimated_power_w(200.0, 0.75), 200.0 * (0.1 + 0.9 * 0.75));
  EXPECT_FALSE(parse_cpu_times("intr 1 2 3\n"));
}

TEST(CpuBackend, DevicesOfATreeAndTheirCounters) {
  component_options o;
  o.powercap_root = kFixtures + "/intel-2s-dram";
  o.proc_root = kFixtures + "/does-not-exist";
  cpu_backend b(o);
  ASSERT_EQ(b.devices().size(), 4U);
  EXPECT_EQ(b.devices()[0].kind, device_kind::cpu);
  EXPECT_EQ(b.devices()[2].kind, device_kind::dram);
  EXPECT_EQ(b.devices()[2].uuid, "intel-rapl:0:0");
  EXPECT_EQ(b.devices()[0].method(), energy_method::counter);
  EXPECT_EQ(b.devices()[0].wrap->modulus_uj, kIntelRange + 61);
  const auto r = b.read(1, read_what::all);
  EXPECT_EQ(r.status, read_status::ok);
  EXPECT_EQ(*r.energy_uj, 200000000U);
  EXPECT_FALSE(r.energy_mj);
  ASSERT_EQ(b.components().size(), 2U);
  EXPECT_EQ(b.components()[0].method, energy_method::counter);
}

TEST(CpuBackend, NamedComponentsThatCannotBeMeasuredAreErrors) {
  component_options o;
  o.powercap_root = kFixtures + "/amd-1p";
  o.named = true;
  o.cpu = false;
  o.dram = true;
  EXPECT_THROW(cpu_backend{o}, fatal_error);  // AMD Zen has no dram domain
  o.named = false;
  cpu_backend b(o);  // not named: said in the records instead
  EXPECT_TRUE(b.devices().empty());
  EXPECT_NE(b.components()[0].detail.find("no dram domain"), std::string::npos);
}

}  // namespace
}  // namespace joules::rapl
