#pragma once
// RAPL through the Linux powercap sysfs ABI (docs/carbon.md; Documentation/power/powercap):
// finds the zones under a root (JOULES_POWERCAP_ROOT, else /sys/class/powercap), chooses the
// ones that can be added up without counting anything twice, and reads their energy counters.
//
//   intel-rapl:N     a top-level zone: "package-N" (or "package-N-die-D"), or "psys" (the
//                    platform, which contains the packages)
//   intel-rapl:N:M   a subzone of N: "core", "uncore" (inside the package) or "dram" (beside it)
//
// AMD Zen CPUs expose the same intel-rapl zones (the kernel's intel_rapl driver covers AMD
// families 17h, 19h and 1Ah).  Summed: every package and every DRAM zone; psys only where there
// is no package zone, and then without the DRAM zones (psys covers the whole SoC, its memory
// included); never core or uncore; never the intel-rapl-mmio duplicates of packages.
//
// Since Linux 5.10 (CVE-2020-8694) energy_uj is readable by root only: "absent" (no zones: a VM,
// a container that masks powercap, a kernel without RAPL for this CPU), "unreadable" (with the
// exact fix) and "readable" are told apart.  Thread-safety: free functions, no shared state.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace joules::rapl {

enum class domain { package, dram, core, uncore, psys, other };
std::string_view to_string(domain d);

enum class access { readable, unreadable, missing };

struct zone {
  std::string id;    // "intel-rapl:0:1"
  std::string path;  // its directory
  std::string name;  // the zone's `name` file: "package-0", "dram", "psys"
  domain kind = domain::other;
  unsigned top = 0;  // N of intel-rapl:N[:M]
  bool subzone = false;
  std::optional<std::uint64_t> max_energy_range_uj;
  access energy = access::missing;  // of energy_uj
  int error = 0;                    // errno when energy_uj could not be read
};

enum class status { absent, unreadable, readable };
std::string_view to_string(status s);

struct discovery {
  std::string root;
  status state = status::absent;
  std::vector<zone> zones;            // every RAPL zone found, in id order
  std::vector<std::size_t> cpu;       // zones summed as the CPU (packages, else psys), readable
  std::vector<std::size_t> dram;      // DRAM zones, readable
  std::vector<std::string> left_out;  // zones not summed, and why
  std::string reason;                 // absent or unreadable: why, in words
  std::string fix;  // unreadable: the exact commands that make the counters readable
  bool cpu_unreadable = false;
  bool dram_unreadable = false;
  // Why `cpu` or `dram` is empty, each naming its own zones (empty when there are zones).
  std::string cpu_reason;
  std::string dram_reason;
  // `cpu` is psys, which contains the DRAM: the DRAM zones in `dram` are measured only when the
  // CPU is not (cpu_backend.hpp), never added to psys.
  bool dram_inside_psys = false;
};

// JOULES_POWERCAP_ROOT when set, else /sys/class/powercap.
std::string default_root();

// Looks at every zone under `root` (flat, as /sys/class/powercap lists them, or nested, as
// /sys/devices/virtual/powercap/intel-rapl does) and reads each energy_uj once.
discovery discover(const std::string& root);

struct counter_read {
  std::optional<std::uint64_t> uj;
  int error = 0;  // errno, or EINVAL for a file that holds no number
};
// Reads `zone_path`/energy_uj (open, read, close: a zone that is replaced stays readable).
counter_read read_energy_uj(const std::string& zone_path);

// The highest power (W) one RAPL domain can plausibly draw; a counter decrease that would need
// more since the previous read is a reset, not a wrap.  Also sets how often counters are read.
inline constexpr double kMaxPlausiblePowerW = 2000.0;

// One full turn of a counter whose max_energy_range_uj is `range`, rounded to the µJ.  The kernel
// (drivers/powercap/intel_rapl_common.c) keeps the energy unit in whole nJ, 2^-ESU J truncated
// (61035 nJ for ESU 14 on most Intel CPUs, 15258 nJ for ESU 16 on AMD Zen, a fixed 15300 nJ for
// Intel server DRAM), and reports the 32-bit counter's largest value times it: 262143328850,
// 65532610987 and 65712999613 µJ.  A turn is 2^32 units: 262143328911, 65532611002 and
// 65712999629 µJ.  At least range + 1 µJ.
std::uint64_t wrap_modulus_uj(std::uint64_t max_energy_range_uj);

// The longest time between two reads that cannot miss a wrap at kMaxPlausiblePowerW, with a
// factor of two to spare: modulus / power / 2.
double max_read_interval_s(std::uint64_t modulus_uj);

}  // namespace joules::rapl
