#pragma once
// A parsed scenario (README "Scenario file"): the simulated system and its devices, with every
// default filled in.  Built once per nvmlInit that loads a new scenario and never freed while
// the library is loaded, so device handles stay valid pointers even across re-initialisation.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/nvml/nvml_abi.hpp"
#include "health.hpp"
#include "json_fields.hpp"
#include "limit_state.hpp"
#include "nvml_errors.hpp"
#include "power_model.hpp"  // tests/fake_common

namespace fake_nvml {

// The pieces every fake shares (tests/fake_common).
using fake_gpu::json_fields;
using fake_gpu::power_function;
using fake_gpu::power_model;
using fake_gpu::scenario_error;

struct architecture {
  const char* name;
  unsigned int nvml_code;  // nvmlDeviceArchitecture_t
  int rank;                // generation order: kepler 0 ... rubin 9
  int cc_major;
  int cc_minor;
  bool mig_capable;
};
inline constexpr int kRankVolta = 3;
inline constexpr int kRankAmpere = 5;
inline constexpr int kRankHopper = 7;

struct counter_config {
  bool supported = true;
  double update_s = 0.0;  // 0: continuous
  double phase_s = 0.0;
  unsigned long long initial_mj = 0;
  // CPU time a read of the counter takes (the driver's work, spent on the caller's thread):
  // about 3,900 µs on an H100, where a power reading takes 2.5 µs (docs/nvml-notes.md §2.4).
  unsigned int read_cpu_us = 0;
  // Up to this much more, at random, before the value is taken: another process holding the
  // driver (a second reader of the counter on an H100 adds up to its own 3,900 µs).
  unsigned int read_wait_us = 0;
};

struct reading_config {
  bool supported = true;
  double window_s = 0.0;  // 0: the instantaneous P(tau)
  double update_s = 0.0;  // 0: tau = t
};

struct process {
  unsigned int pid = 0;
  unsigned long long used_memory_bytes = 0;
  // What nvmlDeviceGetProcessUtilization reports for it (percent); a process at 0 and 0 ran
  // nothing and gets no sample.
  unsigned int sm_util_percent = 0;
  unsigned int memory_util_percent = 0;
  unsigned int gpu_instance_id = 0xFFFFFFFFU;  // not MIG
  unsigned int compute_instance_id = 0xFFFFFFFFU;
};

struct mig_device {
  unsigned int parent = 0;  // index of the GPU
  unsigned int index = 0;   // index among the parent's MIG devices
  std::string name;
  std::string uuid;
  unsigned int gpu_instance_id = 0;
  unsigned int compute_instance_id = 0;
  unsigned long long memory_total_bytes = 0;
  // In use besides its processes' memory (contexts, the instance's own reservations).
  unsigned long long memory_used_bytes = 0;
  std::vector<process> processes;  // ids filled in from the instance
  // GPM of its GPU instance (nvmlGpmMigSampleGet), percent; unset: NOT_SUPPORTED for that metric.
  std::optional<double> sm_util_percent;
  std::optional<double> sm_occupancy_percent;
  std::optional<double> tensor_util_percent;
  std::optional<double> dram_bw_util_percent;
};

// What a device's health and process lists become from `at_s` on (a `changes` entry, README
// "Changes"): the whole state, earlier entries and the device's own keys filled in.
struct state_change {
  double at_s = 0.0;
  device_health health;
  std::vector<process> compute_processes;
  std::vector<process> graphics_processes;
};

// An XID error the driver reports at scenario time at_s (README "XID errors").
struct xid_event {
  double at_s = 0.0;
  unsigned int xid = 0;
};

struct device {
  unsigned int index = 0;
  std::string name;
  std::string uuid;
  std::string serial;
  std::string pci_bus_id;  // "00000000:18:00.0"
  unsigned int pci_domain = 0;
  unsigned int pci_bus = 0;
  unsigned int pci_device = 0;
  const architecture* arch = nullptr;
  int cc_major = 0;
  int cc_minor = 0;
  unsigned int latency_us = 0;
  bool no_permission = false;

  std::unique_ptr<power_model> power;  // owns the current limit too
  counter_config energy_counter;
  reading_config power_usage;
  reading_config power_instant;
  reading_config power_average;
  unsigned int default_limit_mw = 700000;
  unsigned int min_limit_mw = 200000;
  unsigned int max_limit_mw = 700000;
  bool limit_settable = true;
  // false: a board whose limit cannot be changed (GeForce, older boards): the range and the
  // setters answer NOT_SUPPORTED, the limit in force still reads.
  bool limits_supported = true;
  // The workload's time per step at each power limit, relative to an unconstrained step
  // ({limit_w, factor}, limit ascending; README "The workload's response to a limit").  Empty:
  // 1 at every limit.
  fake_gpu::step_curve step_time_factor;
  // nvmlDeviceGetProcessUtilization answers (else NOT_SUPPORTED, as on boards without it).
  bool process_utilization = true;

  fault_set faults;
  bool mig_enabled = false;
  unsigned int mig_max_count = 0;
  std::size_t mig_first = 0;  // this GPU's MIG devices are scenario::migs[mig_first, +mig_count)
  std::size_t mig_count = 0;
  std::vector<process> compute_processes;  // including those of its MIG devices
  std::vector<process> graphics_processes;
  device_health health;
  std::vector<state_change> changes;  // at_s ascending
  // Field ids that answer NOT_SUPPORTED although their getter works (a driver whose field table
  // lacks them).
  std::vector<unsigned int> fields_not_supported;
  // XID errors, at_s ascending; `xid_events: false` is a board whose driver reports no events.
  std::vector<xid_event> xids;
  bool xid_events = true;

  // Health and processes at scenario time t: the last change at or before t, else the above.
  const device_health& health_at(double t) const;
  const std::vector<process>& processes_at(double t, bool graphics) const;
  // PCIe bytes sent (tx) or received since scenario time 0: the rates of each state integrated.
  unsigned long long pcie_bytes(double t, bool tx) const;

  // The README's energy model.
  unsigned long long counter_mj(double t) const;
  // step_time_factor at `limit_w`: linear between its points, constant outside them.
  double step_time_factor_at(double limit_w) const { return step_time_factor.at(limit_w); }
  unsigned int reading_mw(const reading_config& r, double t) const;
};

// Whether the row remapper answers (nvmlDeviceGetRemappedRows and fields 142-145): Ampere and
// newer, and not while MIG is on (nvml.h:8418).
inline bool remapper_answers(const device& d) {
  return d.arch->rank >= kRankAmpere && !d.mig_enabled;
}

// What a device handle points at: a whole GPU, or a MIG device (gpu is then its parent).
struct handle_slot {
  device* gpu = nullptr;
  const mig_device* mig = nullptr;
};

struct scenario {
  std::string driver_version;
  std::string nvml_version;
  int cuda_driver_version = 0;
  nvmlReturn_t init_error = joules::nvml::kSuccess;
  unsigned int process_struct_bytes = 24;
  std::vector<device> devices;
  std::vector<mig_device> migs;
  std::vector<handle_slot> slots;  // devices first, then migs; handles point in here

  const handle_slot* slot_of(joules::nvml::nvmlDevice_t handle) const;
  joules::nvml::nvmlDevice_t handle_of(const handle_slot& slot) const;
};

// What the imitated driver knows, from the highest `level` it exports (see runtime.cpp).
struct driver_defaults {
  const char* driver_version;
  const char* nvml_version;
  int cuda_driver_version;
};

// Parses scenario JSON text.  Throws scenario_error (or nlohmann's parse_error) with a message
// that names the offending key.
std::unique_ptr<scenario> parse_scenario(const std::string& text, const driver_defaults& defaults);

}  // namespace fake_nvml
