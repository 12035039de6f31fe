#pragma once
// A parsed scenario of the fake Level Zero loader (README.md): the devices, their power domains
// and their other Sysman components.  Built once per initialisation that loads a new scenario and
// never freed while the library is loaded, so handles stay valid pointers.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "faults.hpp"
#include "json_fields.hpp"
#include "limit_state.hpp"
#include "power_model.hpp"

namespace fake_ze {

using fake_gpu::fault_set;
using fake_gpu::json_fields;
using fake_gpu::power_model;

// Where a device's energy counters are: one card or package domain, or one per stack; `unknown`
// is a device-level domain whose driver does not say which (no zes_power_ext_properties_t).
enum class domains { card, package, stacks, unknown };

struct health {
  double gpu_mhz = 1600;
  double gpu_max_mhz = 1600;
  double mem_mhz = 3200;
  double mem_max_mhz = 3200;
  std::uint32_t throttle_reasons = 0;  // zes_freq_throttle_reason_flags_t
  double temperature_c = 45;
  double memory_temperature_c = 50;
  double max_temperature_c = 105;
  std::uint64_t memory_total_bytes = 137438953472ULL;  // 128 GiB
  std::uint64_t memory_used_bytes = 0;
  double utilization_percent = 0;
  std::uint64_t ras_correctable = 0;
  std::uint64_t ras_uncorrectable = 0;
  int pcie_gen = 5;
  int pcie_width = 16;
  int pcie_max_gen = 5;
  int pcie_max_width = 16;
};

struct device {
  unsigned index = 0;
  std::string name;
  std::uint8_t uuid[16] = {};
  unsigned domain = 0, bus = 0, dev = 0, function = 0;
  unsigned stacks = 1;
  unsigned latency_us = 0;
  std::unique_ptr<power_model> power;
  bool counter_supported = true;
  double update_s = 0.0;
  double phase_s = 0.0;
  std::uint64_t initial_uj = 0;
  domains where = domains::card;
  int default_limit_mw = 600000;
  int min_limit_mw = -1;
  int max_limit_mw = 600000;
  bool limit_settable = true;    // false: setting a limit answers INSUFFICIENT_PERMISSIONS
  bool limits_supported = true;  // false: no domain canControl, the limit calls are unsupported
  bool limits_ext = true;        // false: zesPowerGetLimitsExt/SetLimitsExt are unsupported
  // The workload's time per step at each limit (tests/fake_common/limit_state.hpp).
  fake_gpu::step_curve step_time_factor;
  std::string uuid_text;  // the UUID as joules writes it, for FAKE_ZE_STATE_FILE
  health state;
  fault_set faults;

  // The energy counter of one domain at scenario time t, in µJ (modulo 2^64): the whole
  // device's, or stack k's share of n.
  std::uint64_t energy_uj(double t, unsigned share_of) const;
};

// Every Sysman handle points at one of these.
struct component {
  enum class kind { device, power, frequency, temperature, memory, engine, ras };
  kind what = kind::device;
  device* owner = nullptr;
  unsigned sub = 0;  // the domain's stack, the frequency or temperature or RAS type
  bool on_subdevice = false;
};

struct scenario {
  bool has_zes_init = true;
  std::string driver_version;
  long long init_error = 0;
  std::vector<device> devices;
  std::vector<component> components;  // devices first, in order; handles point in here

  const component* of(const void* handle, component::kind k) const;
  void* handle(const component& c) const { return const_cast<component*>(&c); }
};

// Parses scenario JSON text; throws scenario_error (or nlohmann's parse_error).
std::unique_ptr<scenario> parse_scenario(const std::string& text);

// ze_result_t of a name such as "DEVICE_LOST" or "ZE_RESULT_ERROR_UNKNOWN"; throws when unknown.
long long result_code(json_fields& f, const std::string& key);

}  // namespace fake_ze
