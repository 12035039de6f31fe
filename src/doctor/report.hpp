#pragma once
// What `joules doctor` found: the NVML library, what can be measured on each GPU, which CUDA
// device is which GPU, the CPU and DRAM (RAPL), and the findings with their severities.  Filled
// by doctor_command.cpp (all driver calls on the sampler thread), then concluded and rendered
// here without touching any hardware, so reports can be unit-tested.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.hpp"
#include "doctor/cuda_order.hpp"
#include "health/findings.hpp"

namespace joules::doctor {

// A read of energy and power that takes longer than this is a slow driver: joules' sampler
// reads every GPU every 100 ms, and every ~1 ms around a boundary to place it within a counter
// update.  At 10 ms a read (one NVML call on current drivers, two on old ones),
// eight GPUs take 80 ms of each 100 ms tick and the boundary reads end up 80 ms apart, so a run
// can no longer be measured as designed; a healthy driver answers such a call in far less than
// a millisecond (the fake NVML of the tests takes 20 µs).
inline constexpr double kSlowReadS = 0.010;
// doctor stops asking for health and capabilities (tens of calls per GPU) once it has spent
// this long examining GPUs, so that a node of slow GPUs still gets its answer quickly.
inline constexpr double kExamineBudgetS = 2.0;

struct gpu_report {
  device_info info;
  device_capabilities caps;
  std::optional<health_reading> health;
  device_reading reading;              // one reading of energy and power, taken by doctor
  std::optional<double> read_s;        // how long that reading took (the faster of two if slow)
  std::string not_checked;             // why health and capabilities were not asked for
  std::optional<unsigned> cuda_index;  // within this job's CUDA_VISIBLE_DEVICES, when visible
};

// A power limit a joules changed and has not set back yet (src/control/journal.hpp): under way
// while that joules runs, left changed when it ended without restoring (a SIGKILL, a power loss).
struct changed_limit {
  unsigned gpu = 0;  // its index when the journal was written
  std::string uuid;
  double original_w = 0.0;  // the limit to set back
  std::string command;      // "tune", "sweep"
  long pid = 0;
  std::string started;
  bool owner_running = false;
  std::string journal;  // the journal's path
};

// What the caller asks of the findings (`--fail-on`, `--ignore`): codes of checks whose findings
// count as critical, and codes whose findings are set aside (listed, never counted).
struct check_policy {
  std::vector<std::string> fail_on;
  std::vector<std::string> ignore;
};

// Every check's code, in the order docs/monitor-doctor.md lists them.
const std::vector<std::string_view>& known_checks();
// Checks that say what joules cannot measure here (not that something is wrong): information,
// unless `--fail-on` names them.
bool is_capability_gap(std::string_view code);
// The first code of `codes` that no check has, or nullopt.
std::optional<std::string> unknown_check(const std::vector<std::string>& codes);

struct report {
  std::string hostname;
  std::string time;  // ISO-8601 UTC
  bool backend_ok = false;
  std::string backend_error;  // why the backend (NVML) could not be opened
  backend_meta meta;
  std::vector<std::string> notices;  // GPUs found but not usable
  std::string scope;                 // which GPUs were checked, and why
  std::vector<gpu_report> gpus;
  cuda_mapping cuda;
  std::vector<device_info> host_devices;     // CPU packages and DRAM measured through RAPL
  std::vector<component_status> components;  // what became of CPU and DRAM, with fixes
  // Whether this process may change power limits, in words (src/control/permission.hpp): the
  // same for every GPU, learnt without changing anything.
  std::string power_limit_permission;
  std::vector<changed_limit> changed_limits;
  check_policy policy;
  std::vector<health::finding> findings;  // set by conclude()
  std::vector<health::finding> ignored;   // findings of the checks policy.ignore names
  int exit_status = health::kHealthy;     // set by conclude()
};

// Findings about what can be measured on one GPU (not its health).
std::vector<health::finding> measurement_findings(const gpu_report& g);

// Gathers every finding (backend, GPUs' measurement and health, CUDA mapping, CPU and DRAM),
// most severe first, and the exit status.
void conclude(report& r);

// For people: sections, then the findings with their fixes, then the status; long lines wrapped
// within `width` columns, except the fixes (commands to copy whole).
std::string render_text(const report& r, bool color, std::size_t width = 80);
// For machines: one JSON object on one line (docs/monitor-doctor.md).
std::string render_json(const report& r);

}  // namespace joules::doctor
