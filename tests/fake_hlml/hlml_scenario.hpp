#pragma once
// The fake HLML's scenario (README.md): the Gaudi devices and what the library reports about
// each, and the process-wide state (reference-counted initialisation, scenario time, the prologue
// of every call about a device).  A scenario is built once per hlml_init that loads a new one and
// never freed while the library is loaded, so handles stay valid pointers.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "faults.hpp"
#include "power_model.hpp"

namespace fake_hlml {

struct counter_config {
  bool supported = true;
  double update_s = 0.01;  // the fake's default; docs/hlml-notes.md §3 says what is known
  double phase_s = 0.0;
  std::uint64_t initial_mj = 0;
};

struct power_config {
  bool supported = true;
  double update_s = 0.0;  // 0: P(t) at the call
};

struct health {
  unsigned aip_util = 0;
  unsigned long long memory_total = 96ULL << 30;  // Gaudi 2: 96 GB HBM2E
  unsigned long long memory_used = 0;
  unsigned aip_c = 40;
  unsigned board_c = 35;
  unsigned soc_mhz = 1800;
  unsigned soc_max_mhz = 1800;
};

struct device {
  unsigned index = 0;
  std::string name;
  std::string uuid;
  std::string pci_bus_id;
  unsigned latency_us = 0;
  std::unique_ptr<fake_gpu::power_model> power;
  counter_config counter;
  power_config power_usage;
  unsigned default_limit_mw = 600000;
  health state;
  fake_gpu::fault_set faults;

  // The counter at scenario time t (mJ).
  std::uint64_t energy_mj(double t) const;
  // The power a reading at t shows, in mW.
  unsigned power_mw(double t) const;
};

struct scenario {
  int init_error = 0;  // what hlml_init returns
  std::vector<device> devices;

  const device* of(const void* handle) const;
};

// Parses scenario JSON text; throws fake_gpu::scenario_error (or nlohmann's parse_error).
std::unique_ptr<scenario> parse_scenario(const std::string& text);

// hlml_init: loads FAKE_HLML_SCENARIO on the first reference.  Returns 0, the scenario's
// init_error, or -1 when the scenario cannot be read (explained on stderr).
int init();
void shutdown();
const scenario* current();

// The prologue of a call about one device: validates the handle, applies the latency, and says
// whether the device is lost.
class call {
 public:
  enum class state { ok, uninitialised, invalid, lost };
  explicit call(const void* handle);

  state status() const { return state_; }
  const device& dev() const { return *dev_; }
  double t() const { return t_; }
  // The code a reading of this kind returns now (0: none), from the device's faults.
  long long fault(fake_gpu::reading_kind kind) const;

 private:
  state state_ = state::ok;
  const device* dev_ = nullptr;
  double t_ = 0.0;
};

}  // namespace fake_hlml
