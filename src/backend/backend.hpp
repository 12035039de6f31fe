#pragma once
// The one small interface between joules and hardware.  A backend lists its devices with the
// capabilities probed once at open, and reads a device.  Backends know hardware and nothing else:
// no clocks, no accounting, no output.
//
// Thread-safety: devices() and meta() may be called from any thread; read() and everything that
// touches the hardware are called by the sampler thread only (DESIGN.md), after open.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/health.hpp"
#include "util/units.hpp"

namespace joules {

// How a number was obtained (DESIGN.md invariant 3).  Written to records by name.
enum class energy_method {
  counter,    // differences of the device's own energy counter
  polled,     // trapezoidal integration of polled power readings
  simulated,  // the sim backend's model
  estimated,  // a model of a device that cannot be measured (RAPL issue: TDP x utilisation)
  none,       // nothing could be measured
};
std::string_view to_string(energy_method m);

// Where a device's power readings come from.
enum class power_source {
  none,
  field_instant,  // NVML_FI_DEV_POWER_INSTANT through nvmlDeviceGetFieldValues
  power_usage,    // nvmlDeviceGetPowerUsage (a 1 s average on Ampere and newer)
  model,          // the sim backend
};
std::string_view to_string(power_source s);

struct device_info {
  unsigned index = 0;      // the backend's own index (NVML index, as nvidia-smi shows it)
  std::string uuid;        // the key of the device in every record (DESIGN.md invariant 5)
  std::string pci_bus_id;  // fallback key
  std::string name;
  std::string architecture;  // "hopper", "ampere", ...; empty when unknown
  bool has_energy_counter = false;
  power_source power = power_source::none;
  // Averaging window of the power reading when it is known (1 s for nvmlDeviceGetPowerUsage on
  // Ampere and newer); readings are placed at the middle of their window.
  std::optional<seconds> power_window;
  std::optional<watts> power_limit;
  std::optional<watts> default_power_limit;
  std::optional<watts> min_power_limit;
  std::optional<watts> max_power_limit;
  bool simulated = false;

  // The method this device's energy will be measured with when nothing fails.
  energy_method method() const {
    if (simulated) return energy_method::simulated;
    if (has_energy_counter) return energy_method::counter;
    if (power != power_source::none) return energy_method::polled;
    return energy_method::none;
  }
  const std::string& key() const { return uuid.empty() ? pci_bus_id : uuid; }
};

enum class read_status {
  ok,     // the requested readings that the device supports are filled in
  lost,   // the device fell off the bus or otherwise became inaccessible, for good
  error,  // this read failed; later reads may succeed
};

// What to read.  The sampler reads only the counter while it pins down counter update instants.
enum class read_what { all, counter };

struct device_reading {
  read_status status = read_status::ok;
  std::optional<std::uint64_t> energy_mj;  // raw counter: mJ since the driver was loaded
  std::optional<watts> power;
  int error_code = 0;  // the backend's own code when status != ok (NVML return value)
  // A capability that answered NOT_SUPPORTED mid-run; the sampler turns it off for good.
  bool counter_unsupported = false;
  bool power_unsupported = false;
};

struct backend_meta {
  std::string backend;       // "nvml", "sim"
  std::string library_path;  // the NVML file loaded
  std::string driver_version;
  std::string library_version;  // NVML version
};

class backend {
 public:
  virtual ~backend() = default;

  virtual const backend_meta& meta() const = 0;
  virtual const std::vector<device_info>& devices() const = 0;
  // Reads device `i` (an index into devices()).  Never throws; failures are in the status.
  virtual device_reading read(std::size_t i, read_what what) = 0;

  // Health and profiling readings of device `i` (every field optional).  Slower than read():
  // the sampler asks for them at its health interval only.  Never throws.
  virtual health_reading read_health(std::size_t i) {
    (void)i;
    return {};
  }

  // For CUDA_VISIBLE_DEVICES entries naming a MIG instance: the UUID of the GPU that holds it.
  virtual std::optional<std::string> parent_of_mig(std::string_view mig_uuid) {
    (void)mig_uuid;
    return std::nullopt;
  }

  // Lines to show the user about devices that were found but cannot be used (no permission...).
  const std::vector<std::string>& notices() const { return notices_; }

 protected:
  std::vector<std::string> notices_;
};

// Options of the sim backend (docs/sim-backend.md).
struct sim_options {
  std::string model = "h100-sxm";  // a name from sim_models(), or a free name with --sim-tdp
  std::optional<double> tdp_w;     // overrides the model's TDP
  unsigned gpus = 8;
  std::string profile = "train";  // train | idle | a constant utilisation 0..1
};

struct backend_options {
  std::string name = "auto";  // auto | nvml | sim
  std::string nvml_library;   // empty: JOULES_NVML_LIBRARY or libnvidia-ml.so.1
  sim_options sim;
};

// Opens the backend named in `options`.  "auto" means NVML: joules never falls back to the sim
// backend silently, it fails with a message that mentions --backend sim.  Throws fatal_error.
std::unique_ptr<backend> open_backend(const backend_options& options);

}  // namespace joules
