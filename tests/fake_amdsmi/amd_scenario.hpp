#pragma once
// A parsed scenario of the fake AMD SMI / ROCm SMI (README.md): the GPUs, their partitions, and
// what the library reports about each.  Built once per amdsmi_init / rsmi_init that loads a new
// scenario and never freed while the library is loaded, so handles stay valid pointers.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "faults.hpp"
#include "json_fields.hpp"
#include "limit_state.hpp"
#include "power_model.hpp"

namespace fake_amdsmi {

using fake_gpu::fault_set;
using fake_gpu::json_fields;
using fake_gpu::power_model;

struct version {
  unsigned major = 24;
  unsigned minor = 7;
  unsigned release = 0;
  unsigned number() const { return major * 100 + minor; }
};

struct counter_config {
  bool supported = true;
  double update_s = 0.001;  // the driver's 1 ms metrics cache
  double phase_s = 0.0;
  double unit_uj = 1e6 / 65536.0;  // what the accumulator counts: 2^-16 J
  float resolution_uj = 15.3F;     // what the library reports (ROCm SMI's hard-coded value)
  std::uint64_t initial_counts = 0;
};

struct power_config {
  bool current = true;   // current_socket_power is filled (MI300)
  bool average = false;  // average_socket_power is filled (MI200)
  double update_s = 0.0;
  double window_s = 0.0;  // average over this window before the update instant (0: P(τ))
};

struct health {
  unsigned gfx_activity = 0;
  unsigned umc_activity = 0;
  unsigned vram_total_mb = 196592;  // MI300X: 192 GiB
  unsigned vram_used_mb = 0;
  long long hotspot_c = 40;
  long long vram_c = 35;
  long long critical_c = 100;
  long long emergency_c = 105;
  unsigned gfx_mhz = 2100;
  unsigned gfx_max_mhz = 2100;
  unsigned mem_mhz = 1300;
  unsigned mem_max_mhz = 1300;
  std::uint64_t ecc_correctable = 0;
  std::uint64_t ecc_uncorrectable = 0;
  unsigned pcie_width = 16;
  unsigned pcie_max_width = 16;
  unsigned pcie_speed_mt = 32000;  // Gen5
  unsigned pcie_max_speed_mt = 32000;
  bool power_capped = false;  // PVIOL: package power tracking holds the clocks down
};

struct gpu {
  unsigned index = 0;
  std::string name;
  std::string uuid;
  std::uint64_t unique_id = 0;
  unsigned domain = 0, bus = 0, device = 0;
  unsigned partitions = 1;  // compute partitions (XCPs) enumerated as processors
  unsigned latency_us = 0;
  std::unique_ptr<power_model> power;
  counter_config counter;
  power_config socket_power;
  unsigned default_limit_mw = 750000;
  unsigned min_limit_mw = 0;
  unsigned max_limit_mw = 750000;
  bool limit_settable = true;    // false: setting the cap answers NO_PERM / PERMISSION
  bool limits_supported = true;  // false: the cap calls answer NOT_SUPPORTED (a VM guest)
  // The workload's time per step at each cap (README.md, tests/fake_common/limit_state.hpp).
  fake_gpu::step_curve step_time_factor;
  health state;
  fault_set faults;

  // The accumulator at scenario time t (counts, modulo 2^64).
  std::uint64_t counts(double t) const;
  // The socket power a reading at t shows, in whole watts.
  unsigned watts(double t) const;
};

// What a processor handle points at: one partition of one GPU.
struct processor {
  gpu* owner = nullptr;
  unsigned partition = 0;  // 0: the primary, which reports the GPU's power and energy
};

struct scenario {
  version library;  // AMD SMI's version, which decides the struct layouts written
  version rocm_smi{6, 2, 0};
  std::string driver_version;
  long long init_error = 0;  // the status init returns (AMD SMI's code; ROCm SMI maps it)
  std::vector<gpu> gpus;
  std::vector<processor> processors;  // every partition of every GPU; handles point in here

  const processor* of(const void* handle) const;
  void* handle(const processor& p) const;
};

// Parses scenario JSON text; throws scenario_error (or nlohmann's parse_error).
std::unique_ptr<scenario> parse_scenario(const std::string& text);

}  // namespace fake_amdsmi
