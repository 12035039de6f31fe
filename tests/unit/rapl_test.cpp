// RAPL through powercap: which zones are summed, wrap-around exact to the µJ, resets, the CPU
// estimate.  Fixture trees: tests/fixtures/powercap (README there).
#include <fcntl.h>
#include <glob.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "backends/backend.hpp"
#include "backends/rapl/cpu_backend.hpp"
#include "backends/rapl/cpu_estimate.hpp"
#include "backends/rapl/powercap.hpp"
#include "energy/accounting.hpp"
#include "energy/counter_track.hpp"
#include "util/error.hpp"

namespace joules::rapl {
namespace {

const std::string kFixtures = std::string(JOULES_FIXTURES_DIR) + "/powercap";
// max_energy_range_uj as real kernels report it (tests/fixtures/powercap/README.md).
constexpr std::uint64_t kIntelRange = 262143328850ULL;      // 61035 nJ units
constexpr std::uint64_t kAmdRange = 65532610987ULL;         // 15258 nJ units
constexpr std::uint64_t kServerDramRange = 65712999613ULL;  // 15300 nJ units

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
  EXPECT_EQ(*d.zones[1].max_energy_range_uj, kServerDramRange);
  EXPECT_TRUE(d.cpu_reason.empty());
  EXPECT_TRUE(d.dram_reason.empty());
  EXPECT_FALSE(d.dram_inside_psys);
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
  EXPECT_TRUE(d.dram_inside_psys);
}

TEST(Powercap, DramIsNeverAddedToPsys) {
  // psys covers the whole SoC, memory included: psys + DRAM would count the DRAM twice.
  const auto d = discover(kFixtures + "/psys-dram");
  EXPECT_EQ(d.state, status::readable);
  EXPECT_EQ(ids(d, d.cpu), (std::vector<std::string>{"intel-rapl:0"}));
  EXPECT_EQ(ids(d, d.dram), (std::vector<std::string>{"intel-rapl:0:0"}));
  EXPECT_TRUE(d.dram_inside_psys);
  ASSERT_EQ(d.left_out.size(), 1U);
  EXPECT_EQ(d.left_out[0].find("intel-rapl:0:0 (dram): inside psys intel-rapl:0"), 0U)
      << d.left_out[0];

  component_options o;
  o.powercap_root = kFixtures + "/psys-dram";
  o.proc_root = kFixtures + "/does-not-exist";
  cpu_backend both(o);  // the default: psys as the CPU, the DRAM in it, said so
  ASSERT_EQ(both.devices().size(), 1U);
  EXPECT_EQ(both.devices()[0].uuid, "intel-rapl:0");
  EXPECT_EQ(both.devices()[0].name, "platform (psys)");
  ASSERT_EQ(both.components().size(), 2U);
  EXPECT_EQ(both.components()[1].kind, device_kind::dram);
  EXPECT_EQ(both.components()[1].method, energy_method::none);
  EXPECT_EQ(both.components()[1].detail.find("counted in the CPU's intel-rapl:0 psys"), 0U)
      << both.components()[1].detail;
  EXPECT_TRUE(both.components()[1].fix.empty());
  o.named = true;
  EXPECT_THROW(cpu_backend{o}, fatal_error);  // --components cpu,dram: not apart here
  o.cpu = false;
  cpu_backend dram_alone(o);  // --components dram: the DRAM zone alone is fine
  ASSERT_EQ(dram_alone.devices().size(), 1U);
  EXPECT_EQ(dram_alone.devices()[0].uuid, "intel-rapl:0:0");
  EXPECT_EQ(dram_alone.devices()[0].kind, device_kind::dram);
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

// What a user who may not read root-only files finds: discovery and the backend's component
// statuses, from a child process.  As root (CI) the child drops CAP_DAC_OVERRIDE and
// CAP_DAC_READ_SEARCH, the capabilities that let root read a mode-000 file; root without them is
// held to the file's mode like anyone.
struct unprivileged_view {
  std::string error;  // why the child could not look as an unprivileged user
  discovery d;        // state, reasons, fix and the summed zones' ids only
  std::vector<component_status> components;
};

constexpr char kSep = '\x1f';

bool drop_dac_capabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  std::array<__user_cap_data_struct, 2> data{};
  if (::syscall(SYS_capget, &header, data.data()) != 0) return false;
  for (int cap : {CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH}) {
    const auto bit = 1U << (static_cast<unsigned>(cap) % 32U);
    auto& slot = data[static_cast<std::size_t>(cap) / 32U];
    slot.effective &= ~bit;
    slot.permitted &= ~bit;
    slot.inheritable &= ~bit;
  }
  return ::syscall(SYS_capset, &header, data.data()) == 0;
}

std::string describe_unprivileged(const std::string& root, const std::string& probe) {
  if (::geteuid() == 0 && !drop_dac_capabilities())
    return std::string("E") + kSep + "capset: " + std::strerror(errno);
  const int fd = ::open(probe.c_str(), O_RDONLY);
  if (fd >= 0) {
    ::close(fd);
    return std::string("E") + kSep + probe +
           " (mode 000) is still readable without CAP_DAC_OVERRIDE: this filesystem ignores "
           "file modes; set TMPDIR to a directory on one that does not";
  }
  const discovery d = discover(root);
  std::string out = std::string("OK") + kSep + std::string(to_string(d.state)) + kSep + d.reason +
                    kSep + d.fix + kSep + d.cpu_reason + kSep + d.dram_reason + kSep +
                    std::to_string(d.cpu.size()) + kSep + std::to_string(d.dram.size());
  component_options o;
  o.powercap_root = root;
  o.proc_root = root + "/no-proc";
  try {
    cpu_backend b(o);
    for (const auto& c : b.components()) {
      out += kSep + std::string(c.kind == device_kind::dram ? "dram" : "cpu") + kSep + c.detail +
             kSep + c.fix;
    }
  } catch (const std::exception& e) {
    return std::string("E") + kSep + "cpu_backend: " + e.what();
  }
  return out;
}

unprivileged_view discover_unprivileged(const std::string& root, const std::string& probe) {
  unprivileged_view v;
  std::array<int, 2> fds{};
  if (::pipe(fds.data()) != 0) {
    v.error = std::string("pipe: ") + std::strerror(errno);
    return v;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    const std::string out = describe_unprivileged(root, probe);
    std::size_t done = 0;
    while (done < out.size()) {
      const ssize_t n = ::write(fds[1], out.data() + done, out.size() - done);
      if (n <= 0) ::_exit(1);
      done += static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string text;
  std::array<char, 4096> buf{};
  ssize_t n = 0;
  while ((n = ::read(fds[0], buf.data(), buf.size())) > 0)
    text.append(buf.data(), static_cast<std::size_t>(n));
  ::close(fds[0]);
  int wstatus = 0;
  ::waitpid(pid, &wstatus, 0);
  std::vector<std::string> f;
  std::string cur;
  for (char c : text) {
    if (c == kSep) {
      f.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  f.push_back(cur);
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0 || f.empty() || f[0] != "OK") {
    v.error = f.size() > 1 ? f[1] : "the child process failed: " + text;
    return v;
  }
  if (f.size() < 8 || (f.size() - 8) % 3 != 0) {
    v.error = "unexpected reply from the child: " + text;
    return v;
  }
  v.d.state = f[1] == "unreadable" ? status::unreadable
                                   : (f[1] == "readable" ? status::readable : status::absent);
  v.d.reason = f[2];
  v.d.fix = f[3];
  v.d.cpu_reason = f[4];
  v.d.dram_reason = f[5];
  v.d.cpu.resize(std::stoul(f[6]));
  v.d.dram.resize(std::stoul(f[7]));
  for (std::size_t i = 8; i + 2 < f.size(); i += 3) {
    component_status c;
    c.kind = f[i] == "dram" ? device_kind::dram : device_kind::cpu;
    c.detail = f[i + 1];
    c.fix = f[i + 2];
    v.components.push_back(c);
  }
  return v;
}

// A copy of a fixture tree under TMPDIR whose named counters have mode 000.
struct locked_tree {
  std::filesystem::path root;
  locked_tree(const std::string& fixture, const std::vector<std::string>& zones) {
    root = std::filesystem::temp_directory_path() /
           ("joules-rapl-" + fixture + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(root);
    std::filesystem::copy(kFixtures + "/" + fixture, root,
                          std::filesystem::copy_options::recursive);
    for (const auto& z : zones)
      ::chmod((root / z / "energy_uj").c_str(), 0);
  }
  ~locked_tree() { std::filesystem::remove_all(root); }
  locked_tree(const locked_tree&) = delete;
  locked_tree& operator=(const locked_tree&) = delete;
};

// The paths the fix's chmod globs expand to, as a shell would expand them.
std::set<std::string> chmod_targets(const std::string& fix) {
  const std::string start = "sudo chmod a+r ";
  const auto from = fix.find(start);
  const auto to = fix.find(" (until the next reboot)");
  std::set<std::string> out;
  if (from == std::string::npos || to == std::string::npos) return out;
  std::string globs = fix.substr(from + start.size(), to - from - start.size());
  std::size_t pos = 0;
  while (pos <= globs.size()) {
    const auto space = std::min(globs.find(' ', pos), globs.size());
    const std::string pattern = globs.substr(pos, space - pos);
    glob_t g{};
    if (::glob(pattern.c_str(), 0, nullptr, &g) == 0) {
      for (std::size_t i = 0; i < g.gl_pathc; ++i)
        out.insert(g.gl_pathv[i]);
    }
    ::globfree(&g);
    pos = space + 1;
  }
  return out;
}

TEST(Powercap, UnreadableCountersGiveTheFix) {
  const locked_tree t("amd-1p", {"intel-rapl:0"});
  const std::string root = t.root.string();
  const auto v = discover_unprivileged(root, root + "/intel-rapl:0/energy_uj");
  ASSERT_TRUE(v.error.empty()) << v.error;
  EXPECT_EQ(v.d.state, status::unreadable);
  EXPECT_TRUE(v.d.cpu.empty());
  EXPECT_EQ(v.d.reason, root +
                            "/intel-rapl:0/energy_uj is readable by root only (Linux 5.10 and "
                            "later, CVE-2020-8694)");
  EXPECT_EQ(v.d.cpu_reason, v.d.reason);
  // The whole fix, word for word: the udev rule acts on "add" events, and `udevadm trigger`
  // sends "change" unless given --action=add.
  EXPECT_EQ(v.d.fix,
            "run joules as root, or make the counters readable: sudo chmod a+r " + root +
                "/intel-rapl:*/energy_uj (until the next reboot); to keep it, a udev rule: echo "
                "'ACTION==\"add\", SUBSYSTEM==\"powercap\", KERNEL==\"intel-rapl:*\", "
                "RUN+=\"/bin/chmod a+r %S%p/energy_uj\"' | sudo tee "
                "/etc/udev/rules.d/99-joules-rapl.rules && sudo udevadm control --reload && sudo "
                "udevadm trigger --action=add --subsystem-match=powercap (docs/carbon.md: a group "
                "instead of a+r)");
  EXPECT_EQ(chmod_targets(v.d.fix), (std::set<std::string>{root + "/intel-rapl:0/energy_uj",
                                                           root + "/intel-rapl:0:0/energy_uj"}));
  ASSERT_EQ(v.components.size(), 2U);
  EXPECT_EQ(v.components[0].detail, v.d.reason);
  EXPECT_EQ(v.components[0].fix, v.d.fix);
}

TEST(Powercap, EachUnreadableComponentNamesItsOwnZones) {
  const locked_tree t("intel-2s-dram",
                      {"intel-rapl:0", "intel-rapl:1", "intel-rapl:0:0", "intel-rapl:1:0"});
  const std::string root = t.root.string();
  const auto v = discover_unprivileged(root, root + "/intel-rapl:0:0/energy_uj");
  ASSERT_TRUE(v.error.empty()) << v.error;
  EXPECT_EQ(v.d.state, status::unreadable);
  EXPECT_TRUE(v.d.cpu.empty());
  EXPECT_TRUE(v.d.dram.empty());
  const std::string tail = " readable by root only (Linux 5.10 and later, CVE-2020-8694)";
  EXPECT_EQ(v.d.cpu_reason, root + "/intel-rapl:0/energy_uj and 1 more are" + tail);
  EXPECT_EQ(v.d.dram_reason, root + "/intel-rapl:0:0/energy_uj and 1 more are" + tail);
  EXPECT_EQ(v.d.reason, root + "/intel-rapl:0/energy_uj and 3 more are" + tail);
  ASSERT_EQ(v.components.size(), 2U);
  EXPECT_EQ(v.components[0].kind, device_kind::cpu);
  EXPECT_EQ(v.components[0].detail, v.d.cpu_reason);
  EXPECT_EQ(v.components[1].kind, device_kind::dram);
  EXPECT_EQ(v.components[1].detail, v.d.dram_reason);
  EXPECT_EQ(v.components[1].fix, v.d.fix);
  EXPECT_EQ(chmod_targets(v.d.fix).size(), 4U);
}

TEST(Powercap, TheFixOfANestedTreeReachesItsSubzones) {
  const locked_tree t("nested",
                      {"intel-rapl/intel-rapl:0", "intel-rapl/intel-rapl:0/intel-rapl:0:0"});
  const std::string root = t.root.string();
  const auto v = discover_unprivileged(root, root + "/intel-rapl/intel-rapl:0/energy_uj");
  ASSERT_TRUE(v.error.empty()) << v.error;
  EXPECT_EQ(v.d.state, status::unreadable);
  EXPECT_EQ(chmod_targets(v.d.fix),
            (std::set<std::string>{root + "/intel-rapl/intel-rapl:0/energy_uj",
                                   root + "/intel-rapl/intel-rapl:0/intel-rapl:0:0/energy_uj"}))
      << v.d.fix;
}

TEST(Powercap, WrapModulusIsTwoToTheThirtyTwoEnergyUnits) {
  // The kernel's units are whole nJ: 2^32 x 61.035 µJ = 262143328911.36 µJ; x 15.258 µJ =
  // 65532611002.37 µJ; x 15.3 µJ = 65712999628.8 µJ.
  EXPECT_EQ(wrap_modulus_uj(kIntelRange), 262143328911ULL);
  EXPECT_EQ(wrap_modulus_uj(kIntelRange), kIntelRange + 61);
  EXPECT_EQ(wrap_modulus_uj(kAmdRange), 65532611002ULL);
  EXPECT_EQ(wrap_modulus_uj(kAmdRange), kAmdRange + 15);
  EXPECT_EQ(wrap_modulus_uj(kServerDramRange), 65712999629ULL);
  EXPECT_EQ(wrap_modulus_uj(1000), 1001U);  // no 32-bit unit visible: one µJ
  // Read at least every 65.5 s on Intel, 16.4 s on AMD (2 kW, a factor of two to spare).
  EXPECT_NEAR(max_read_interval_s(wrap_modulus_uj(kIntelRange)), 65.5358, 1e-4);
  EXPECT_NEAR(max_read_interval_s(wrap_modulus_uj(kAmdRange)), 16.3832, 1e-4);
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
  EXPECT_EQ(b.devices()[0].wrap->modulus, kIntelRange + 61);
  EXPECT_EQ(b.devices()[2].wrap->modulus, 65712999629ULL);  // server DRAM: 15.3 µJ units
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
