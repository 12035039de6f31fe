// The power-limit journal's format and files, --limits, the grid, and the permission read from
// /proc/self/status (src/control).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "control/gpu_claim.hpp"
#include "control/journal.hpp"
#include "control/limit_plan.hpp"
#include "control/permission.hpp"
#include "util/error.hpp"

namespace joules::control {
namespace {

namespace fs = std::filesystem;

journal_entry entry(const std::string& uuid, std::uint32_t mw) {
  journal_entry e;
  e.uuid = uuid;
  e.index = 3;
  e.name = "NVIDIA H100 80GB HBM3";
  e.original_mw = mw;
  e.pid = 4242;
  e.command = "tune";
  e.started = "2026-11-25T10:00:00.000000Z";
  e.boot_id = "b7c1";
  e.backend = "nvml";
  e.library = "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1";
  return e;
}

TEST(Journal, FormatAndParseRoundTripAndAPartOfOneIsNotAJournal) {
  const journal_entry e = entry("GPU-0000", 650000);
  const std::string text = format_journal(e);
  const auto back = parse_journal(text);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->uuid, "GPU-0000");
  EXPECT_EQ(back->original_mw, 650000U);
  EXPECT_EQ(back->index, 3U);
  EXPECT_EQ(back->pid, 4242);
  EXPECT_EQ(back->name, e.name);
  EXPECT_EQ(back->backend, e.backend);
  EXPECT_EQ(back->library, e.library);
  // Every prefix short of the whole text is refused: a half-written journal is never taken.
  for (std::size_t n = 0; n + 1 < text.size(); ++n)
    EXPECT_FALSE(parse_journal(text.substr(0, n))) << n;
  EXPECT_FALSE(parse_journal("something else\nend\n"));
}

TEST(Journal, EachVendorsBackendAndLibraryAndTheJournalsOfEarlierJoules) {
  journal_entry amd = entry("GPU-4b8ab6c15fd9e300", 500000);
  amd.backend = "rocm_smi";
  amd.library = "/opt/rocm/lib/librocm_smi64.so";
  const std::string text = format_journal(amd);
  // Only NVIDIA's journals carry the key a joules that knew only NVML reads.
  EXPECT_EQ(text.find("nvml_library"), std::string::npos) << text;
  const auto back = parse_journal(text);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->backend, "rocm_smi");
  EXPECT_EQ(back->library, amd.library);
  EXPECT_NE(format_journal(entry("GPU-0000", 1)).find("nvml_library /usr/lib"), std::string::npos);
  // A journal written before joules knew other vendors: NVML's, through its nvml_library.
  const auto old = parse_journal(
      "joules-power-limit-journal 1\nuuid GPU-1\noriginal_mw 700000\nnvml_library /x/nvml.so\n"
      "end\n");
  ASSERT_TRUE(old);
  EXPECT_EQ(old->backend, "nvml");
  EXPECT_EQ(old->library, "/x/nvml.so");
}

TEST(Journal, WriteReadRemoveAndLocks) {
  const fs::path dir =
      fs::temp_directory_path() / ("joules-journal-test-" + std::to_string(getpid()));
  fs::remove_all(dir);
  write_journal(dir, entry("GPU-a", 700000));
  write_journal(dir, entry("GPU-b", 300000));
  // A temporary file of a writer that is gone is tidied away; its rename never happened.
  std::ofstream(dir / "GPU-c.journal.tmp.999999999") << "half";
  const journal_scan scan = read_journals(dir);
  ASSERT_EQ(scan.entries.size(), 2U);
  EXPECT_EQ(scan.entries[0].uuid, "GPU-a");
  EXPECT_EQ(scan.entries[1].original_mw, 300000U);
  EXPECT_FALSE(fs::exists(dir / "GPU-c.journal.tmp.999999999"));
  // One lock per GPU: taken once, refused while held, free again once released.
  {
    auto held = gpu_lock::try_take(dir, "GPU-a");
    ASSERT_TRUE(held);
    EXPECT_TRUE(lock_held(dir, "GPU-a")) << "another open file description sees it held";
    EXPECT_FALSE(gpu_lock::try_take(dir, "GPU-a"));
    EXPECT_TRUE(gpu_lock::try_take(dir, "GPU-b"));
  }
  EXPECT_FALSE(lock_held(dir, "GPU-a"));
  EXPECT_TRUE(remove_journal(dir, "GPU-a"));
  EXPECT_TRUE(remove_journal(dir, "GPU-a"));  // gone already: fine
  EXPECT_EQ(read_journals(dir).entries.size(), 1U);
  fs::remove_all(dir);
}

TEST(Journal, AClaimRefusesAGpuAnotherHoldsAndNamesIt) {
  const std::string dir =
      fs::temp_directory_path() / ("joules-claim-test-" + std::to_string(getpid()));
  fs::remove_all(dir);
  claimed_gpu g;
  g.uuid = "GPU-x";
  g.index = 5;
  g.original_mw = 700000;
  gpu_claim first({g}, "tune", dir);
  first.write_journal();
  try {
    gpu_claim second({g}, "sweep", dir);
    FAIL() << "a second claim of GPU 5 was granted";
  } catch (const fatal_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("GPU 5 (GPU-x)"), std::string::npos) << what;
    EXPECT_NE(what.find("joules tune (pid " + std::to_string(getpid())), std::string::npos) << what;
  }
  EXPECT_EQ(first.outstanding().size(), 1U);
  EXPECT_TRUE(first.restored(0));
  EXPECT_TRUE(first.outstanding().empty());
  EXPECT_TRUE(read_journals(dir).entries.empty());
  fs::remove_all(dir);
}

TEST(Journal, StateDirectoryFromTheEnvironment) {
  ::setenv("JOULES_STATE_DIR", "/somewhere/joules", 1);
  EXPECT_EQ(state_dir(), "/somewhere/joules");
  EXPECT_EQ(journal_dirs(), std::vector<std::string>{"/somewhere/joules"});
  ::unsetenv("JOULES_STATE_DIR");
  if (geteuid() == 0) {
    EXPECT_EQ(state_dir(), "/var/lib/joules");
  } else {
    ::setenv("XDG_STATE_HOME", "/xdg", 1);
    EXPECT_EQ(state_dir(), "/xdg/joules");
    ::unsetenv("XDG_STATE_HOME");
  }
}

TEST(LimitPlan, RangesListsAndTheirErrors) {
  EXPECT_EQ(parse_limits("--limits", "400:200:25"),
            (std::vector<std::uint32_t>{400000, 375000, 350000, 325000, 300000, 275000, 250000,
                                        225000, 200000}));
  // LO is included when STEP does not divide the span.
  EXPECT_EQ(parse_limits("--limits", "400:200:75"),
            (std::vector<std::uint32_t>{400000, 325000, 250000, 200000}));
  EXPECT_EQ(parse_limits("--limits", "300,450,300,262.5"),
            (std::vector<std::uint32_t>{450000, 300000, 262500}));
  for (const char* bad : {"400:500:25", "400:200", "400:200:0", "x", "0,100", "400:200:25:5"}) {
    try {
      parse_limits("--limits", bad);
      ADD_FAILURE() << bad;
    } catch (const usage_error& e) {
      EXPECT_EQ(std::string(e.what()).rfind(std::string("--limits '") + bad + "'", 0), 0U)
          << e.what();
    }
  }
  const limit_bounds b{200000, 700000};
  EXPECT_FALSE(outside_bounds("--limits", "t", {700000, 200000}, b, 0));
  EXPECT_EQ(*outside_bounds("--limits", "150,300", {300000, 150000}, b, 2),
            "--limits '150,300': 150 W is below GPU 2's minimum of 200 W (it accepts 200 "
            "W-700 W)");
}

TEST(LimitPlan, TheGridHoldsTheLimitInForce) {
  const limit_bounds b{200000, 700000};
  const auto grid = limit_grid(b, 100000, 650000);
  EXPECT_EQ(grid,
            (std::vector<std::uint32_t>{700000, 650000, 600000, 500000, 400000, 300000, 200000}));
  EXPECT_EQ(limit_grid(b, 25000).size(), 21U);
  EXPECT_EQ(watts_text(262500), "262.5 W");
}

TEST(Permission, CapSysAdminFromTheStatusText) {
  EXPECT_EQ(cap_sys_admin_in("Name:\tx\nCapEff:\t000001fffeffffff\n"), true);
  EXPECT_EQ(cap_sys_admin_in("CapEff:\t000001fffedfffff\n"), false);  // bit 21 dropped
  EXPECT_EQ(cap_sys_admin_in("CapEff:\t0000000000000000\n"), false);
  EXPECT_EQ(cap_sys_admin_in("CapPrm:\tffffffff\n"), std::nullopt);
  EXPECT_EQ(cap_sys_admin_in("CapEff:\tzz\n"), std::nullopt);
  limit_permission p;
  p.root = false;
  p.cap_sys_admin = true;
  EXPECT_EQ(p.describe(), "yes (CAP_SYS_ADMIN)");
  p.root = true;
  p.cap_sys_admin = false;
  EXPECT_FALSE(p.allowed());
  EXPECT_NE(p.describe().find("--cap-add SYS_ADMIN"), std::string::npos);
}

}  // namespace
}  // namespace joules::control
