#pragma once
// What the AMD backend asks of a library, answered by AMD SMI (amdsmi_source.cpp) or by ROCm SMI
// (rocm_smi_source.cpp): the processors it enumerates (GPUs, or the compute partitions of a
// partitioned GPU), their energy counter, power, power limits and health.  amd_backend.cpp turns
// processors into GPUs and readings into device_reading, the same way for both.
//
// Not thread-safe: owned and called by the sampler thread only.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/amdsmi/amd_decode.hpp"
#include "backends/amdsmi/amd_library.hpp"
#include "backends/backend.hpp"

namespace joules::amd {

// What one call answered, in joules' terms (docs/amd-notes.md §5: neither library has a "GPU is
// lost" status).
enum class outcome {
  ok,
  not_supported,  // NOT_SUPPORTED, NOT_YET_IMPLEMENTED: the reading is off
  lost,           // the processor is not found any more
  failed,         // anything else: this call failed, a later one may not
};

struct processor_info {
  pci_address pci;
  std::optional<unsigned> partition_id;  // the library's, when it says
  std::string uuid;                      // amd-smi's UUID (AMD SMI) or GPU-<unique id> (ROCm SMI)
  std::optional<std::string> unique_id;  // 16 hex digits, ROCr's GPU-<unique id>
  std::string name;                      // the market name, "AMD Instinct MI300X"
};

struct energy_count {
  std::uint64_t counts = 0;
  float resolution_uj = 0.0F;      // as the library reports it (amd_decode.hpp: counter_unit_uj)
  std::uint64_t timestamp_ns = 0;  // the library's own clock
};

struct power_caps {
  std::optional<double> limit_w;
  std::optional<double> default_w;
  std::optional<double> min_w;
  std::optional<double> max_w;
};

// A processor's power cap and the range its driver accepts, in the libraries' unit (µW), with
// the outcome of asking (docs/amd-notes.md §9).
struct cap_reading {
  control_result result;
  std::optional<std::uint64_t> current_uw;
  std::optional<std::uint64_t> default_uw;
  std::optional<std::uint64_t> min_uw;
  std::optional<std::uint64_t> max_uw;
};

class source {
 public:
  virtual ~source() = default;

  // Every processor that is an AMD GPU or partition, in the library's order (amd-smi's GPU
  // indices).  Called once, at open.
  virtual std::vector<processor_info> processors() = 0;
  // The kernel driver's version ("6.8.5"), after processors(); "" when unknown.
  virtual std::string driver_version() = 0;

  // `code` gets the library's status when the outcome is not ok.
  virtual outcome energy(std::size_t p, energy_count& out, std::uint32_t& code) = 0;
  virtual outcome power(std::size_t p, power_source kind, double& watts, std::uint32_t& code) = 0;
  // The power reading processor p answers (current before average), or none.  Probed once.
  virtual power_source probe_power(std::size_t p) = 0;
  virtual power_caps caps(std::size_t p) = 0;
  // The power cap of processor p and its range (sensor 0), for tune and sweep; never throws.
  virtual cap_reading read_cap(std::size_t p) = 0;
  // Sets processor p's power cap to `uw` microwatts (sensor 0).
  virtual control_result set_cap(std::size_t p, std::uint64_t uw) = 0;

  // Health of processor p: every reading is probed at its first call and turned off for good
  // when it does not answer then.
  virtual health_reading health(std::size_t p) = 0;
  // The readings that answered, by name, in health_reading's order (doctor).
  virtual std::vector<std::string> health_supported(std::size_t p) const = 0;
};

std::unique_ptr<source> make_amdsmi_source(const library& lib);
std::unique_ptr<source> make_rocm_smi_source(const library& lib);

// On/off switches of the health readings, one set per processor.
class health_switches {
 public:
  enum reading : std::size_t {
    activity,
    memory,
    temperature,
    memory_temperature,
    thresholds,
    clocks,
    ecc,
    pcie,
    violations,
    kCount
  };
  static const char* name(reading r);

  // Whether to ask: not when off.
  bool ask(reading r) const { return state_[r] != state::off; }
  // Settles a reading by its first answer: success turns it on, anything else off; later
  // failures leave it on (that read is empty).
  void settle(reading r, bool ok) {
    if (state_[r] == state::unknown) state_[r] = ok ? state::on : state::off;
  }
  void off(reading r) { state_[r] = state::off; }
  std::vector<std::string> supported() const;

 private:
  enum class state : std::uint8_t { unknown, on, off };
  state state_[kCount] = {};
};

}  // namespace joules::amd
