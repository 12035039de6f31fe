#pragma once
// CPU power where RAPL cannot measure it (--estimate-cpu), always labelled `estimated`:
//
//   P = TDP x sockets x (kIdleShare + (1 - kIdleShare) x u)
//
// where TDP comes from data/cpu_tdp.csv (or --cpu-tdp) and u is the whole machine's CPU
// utilisation from /proc/stat between two reads.  The idle share (10 % of TDP) is the constant
// term of CodeCarbon's CPU load model; the line through it and TDP is the simplest model that
// neither reports 0 W for an idle CPU nor TDP for a busy one.  It is a model: docs/carbon.md says
// how far off it can be.  Pure functions except the two readers of /proc.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace joules::rapl {

inline constexpr double kIdleShare = 0.10;

struct cpu_identity {
  std::string model;        // "model name" of /proc/cpuinfo, as the kernel gives it
  unsigned sockets = 1;     // distinct "physical id" values (1 when the file has none)
  bool hypervisor = false;  // the "hypervisor" CPU flag: a VM, whose vCPUs are a share of a socket
};

// Reads <proc_root>/cpuinfo.  An unreadable file gives an empty model.
cpu_identity read_cpu_identity(const std::string& proc_root);

// JOULES_PROC_ROOT when set, else /proc.
std::string default_proc_root();

// "Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz" -> "intel xeon gold 6248": lower case, without
// trademarks, "CPU", "Processor", "N-Core" and the clock.
std::string normalise_cpu_name(std::string_view name);

struct tdp_match {
  std::string name;  // as the table has it
  double tdp_w = 0.0;
};

// The TDP of `model` in data/cpu_tdp.csv: the entry equal to it once both are normalised, else
// the longest entry the model starts with (followed by a space).  nullopt when none.
std::optional<tdp_match> lookup_tdp(std::string_view model);

// Cumulative CPU time of the machine (USER_HZ ticks over all CPUs) from /proc/stat's "cpu" line.
struct cpu_times {
  std::uint64_t busy = 0;   // user + nice + system + irq + softirq
  std::uint64_t total = 0;  // busy + idle + iowait + steal
};
std::optional<cpu_times> parse_cpu_times(std::string_view proc_stat);
std::optional<cpu_times> read_cpu_times(const std::string& proc_root);

// Utilisation between successive reads.  Over fewer than kMinTicks ticks (all CPUs together) the
// value of the last long enough span is kept (/proc/stat counts 10 ms ticks: a 1 ms span says
// nothing); before the first such span, the utilisation since boot.  Not thread-safe.
class utilisation {
 public:
  static constexpr std::uint64_t kMinTicks = 20;

  double update(const cpu_times& now);

 private:
  std::optional<cpu_times> last_;
  std::optional<double> value_;
};

inline double estimated_power_w(double tdp_w, double u) {
  return tdp_w * (kIdleShare + (1.0 - kIdleShare) * u);
}

}  // namespace joules::rapl
