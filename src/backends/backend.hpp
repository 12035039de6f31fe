#pragma once
// The one small interface between joules and hardware.  A backend lists its devices with the
// capabilities probed once at open, and reads a device.  Backends know hardware and nothing else:
// no clocks, no accounting, no output.
//
// Thread-safety: devices() and meta() may be called from any thread; read() and everything that
// touches the hardware are called by the sampler thread only, after open.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/health.hpp"
#include "util/error.hpp"
#include "util/units.hpp"

namespace joules {

// How a number was obtained (every energy joules reports says how).  Written to records by name.
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
  field_instant,   // NVML_FI_DEV_POWER_INSTANT through nvmlDeviceGetFieldValues
  power_usage,     // nvmlDeviceGetPowerUsage (a 1 s average on Ampere and newer)
  socket_current,  // AMD: current_socket_power (MI300 and newer; docs/amd-notes.md §3)
  socket_average,  // AMD: average_socket_power (MI200 and older, Radeon)
  model,           // the sim backend
};
std::string_view to_string(power_source s);

// What a device is: a GPU, or a RAPL domain (src/backends/rapl) — a CPU package (or the platform,
// psys, where no package domain exists) or the DRAM of a package.
enum class device_kind { gpu, cpu, dram };
std::string_view to_string(device_kind k);

// A counter that counts modulo `modulus`, in the counter's own units (µJ for RAPL's energy_uj,
// which wraps at max_energy_range_uj; counts for energy_counts); 0 stands for 2^64, a 64-bit
// counter (AMD's accumulator, Level Zero's µJ).  A decrease whose implied power is at most
// `max_power` is a wrap, a larger one a reset.
struct counter_wrap {
  std::uint64_t modulus = 0;
  watts max_power;
};

struct device_info {
  device_kind kind = device_kind::gpu;
  // The backend's own index, as the vendor's tool shows it (nvidia-smi, amd-smi, xpu-smi).
  unsigned index = 0;
  std::string uuid;        // the key of the device in every record
  std::string pci_bus_id;  // fallback key
  std::string name;
  std::string architecture;  // "hopper", "ampere", "gfx942", ...; empty when unknown
  std::string vendor;        // "nvidia", "amd", "intel" for GPUs; empty for CPU and DRAM
  // Other names of the device that --gpus and the visibility variables accept (AMD: ROCr's
  // GPU-<unique id>, which ROCR_VISIBLE_DEVICES takes).
  std::vector<std::string> aliases;
  // Indices of the parts a runtime may enumerate as devices of their own, each measured as this
  // whole device (as a MIG instance is): AMD compute partitions (amd-smi's, ROCr's and HIP's
  // numbering), Intel stacks (ZE_AFFINITY_MASK's numbering in FLAT hierarchy).  Empty: the
  // device is enumerated as itself only, under `index`.
  std::vector<unsigned> partition_indices;
  // The library listed only the devices the job's visibility variable leaves it (Level Zero's
  // zeDeviceGet applies ZE_AFFINITY_MASK itself): the variable is not applied again.
  bool visibility_applied = false;
  bool has_energy_counter = false;
  // µJ per count of device_reading::energy_counts (AMD's counter_resolution).
  double counter_unit_uj = 1.0;
  power_source power = power_source::none;
  // Averaging window of the power reading when it is known (1 s for nvmlDeviceGetPowerUsage on
  // Ampere and newer); readings are placed at the middle of their window.
  std::optional<seconds> power_window;
  std::optional<watts> power_limit;
  std::optional<watts> default_power_limit;
  std::optional<watts> min_power_limit;
  std::optional<watts> max_power_limit;
  bool simulated = false;
  // A model of a device that cannot be measured (CPU power from TDP x utilisation); `name`
  // says which model.
  bool estimated = false;
  // The energy counter advances at every hardware update (~1 ms for RAPL), so an unchanged value
  // between two reads means no energy was used: no update period to learn.
  bool counter_continuous = false;
  std::optional<counter_wrap> wrap;  // when the counter wraps (RAPL, AMD, Level Zero)
  // The device must be read at least this often (a wrapping counter must not wrap twice
  // between two reads); the sampler shortens its interval to it.
  std::optional<seconds> max_read_interval;
  // Why the device could not be read when the backend opened it, though the driver lists it
  // (it fell off the bus before joules started, or every reading of energy and power failed);
  // empty when it could.  Such a device is listed, and shown as lost from the first moment.
  std::string unreadable;

  // The method this device's energy will be measured with when nothing fails.
  energy_method method() const {
    if (simulated) return energy_method::simulated;
    if (estimated) return energy_method::estimated;
    if (has_energy_counter) return energy_method::counter;
    if (power != power_source::none) return energy_method::polled;
    return energy_method::none;
  }
  const std::string& key() const { return uuid.empty() ? pci_bus_id : uuid; }
};

// An NVIDIA GPU, the sim backend's (whose models are NVIDIA's), or one of no vendor: the GPUs
// CUDA_VISIBLE_DEVICES and dcgm-exporter's names are about.
inline bool is_nvidia(const device_info& d) {
  return d.vendor.empty() || d.vendor == "nvidia";
}

// How joules names a GPU to people: "GPU 0" as nvidia-smi numbers NVIDIA's (and the sim
// backend's), "AMD GPU 0" and "Intel GPU 0" as amd-smi and xpu-smi number theirs.
std::string gpu_name(const device_info& d);

enum class read_status {
  ok,     // the requested readings that the device supports are filled in
  lost,   // the device fell off the bus or otherwise became inaccessible, for good
  error,  // this read failed; later reads may succeed
};

// What to read: the energy counter and power; the counter alone; or power alone where the
// device has a power reading (a device without one reads its counter).  The sampler reads power
// alone between the reads of a counter that is costly to read (NVML's on an H100: 4 ms of CPU a
// read, where power takes 2.5 µs; docs/nvml-notes.md §2.4).  A backend whose counter costs
// little may read it anyway.
enum class read_what { all, counter, power };

struct device_reading {
  read_status status = read_status::ok;
  std::optional<std::uint64_t> energy_mj;  // raw counter: mJ since the driver was loaded
  // Raw counter in µJ (RAPL energy_uj, Level Zero), for devices whose counter has µJ
  // resolution; it may wrap (device_info::wrap).
  std::optional<std::uint64_t> energy_uj;
  // Raw counter in counts of device_info::counter_unit_uj (AMD's energy accumulator); it may
  // wrap.  A reading carries at most one of energy_mj, energy_uj and energy_counts.
  std::optional<std::uint64_t> energy_counts;
  std::optional<watts> power;
  int error_code = 0;  // the backend's own code when status != ok (NVML return value, ...)
  // A capability that answered NOT_SUPPORTED mid-run; the sampler turns it off for good.
  bool counter_unsupported = false;
  bool power_unsupported = false;
};

// What became of a component besides the GPUs (docs/carbon.md).
struct component_status {
  device_kind kind = device_kind::cpu;
  energy_method method = energy_method::none;  // none: not measured
  std::string detail;  // how it is measured (the domains, the model), or why it is not
  std::string fix;     // what would make it measurable (unreadable RAPL: the exact commands)
  // RAPL zones found but not added into it, each with the reason ("intel-rapl:1 (psys): the
  // whole platform, which contains the packages: not added to them").
  std::vector<std::string> left_out;
};

// What became of a question to, or a change of, a device's power limit (src/control).
enum class control_status {
  ok,
  no_permission,  // the driver refused: root or CAP_SYS_ADMIN is needed (docs/nvml-notes.md §4)
  not_supported,  // this device's limit cannot be changed (or this backend has none)
  invalid,        // a limit outside the range the device accepts
  lost,           // the device fell off the bus or is otherwise inaccessible
  error,          // any other failure; the detail says which
};
std::string_view to_string(control_status s);

struct control_result {
  control_status status = control_status::ok;
  std::string detail;  // the driver's words for a failure ("NVML_ERROR_NO_PERMISSION")
  bool ok() const { return status == control_status::ok; }
};

// A device's power limit now and the range its driver accepts, in milliwatts (NVML's unit:
// journals and comparisons stay exact).  `current_mw` is the limit set_power_limit sets (NVML's
// management limit), which other limiters may undercut (device_info::power_limit is the
// enforced one).
struct power_limit_reading {
  control_result result;  // not ok: the limits below are what could be read, if anything
  std::optional<std::uint32_t> current_mw;
  std::optional<std::uint32_t> min_mw;
  std::optional<std::uint32_t> max_mw;
  std::optional<std::uint32_t> default_mw;
};

struct backend_meta {
  // "nvml", "amdsmi", "rocm_smi", "levelzero", "sim", "rapl"; GPU backends opened together are
  // joined with '+' ("nvml+amdsmi").
  std::string backend;
  std::string library_path;  // the vendor library loaded
  std::string driver_version;
  std::string library_version;  // NVML's, AMD SMI's, ROCm SMI's or Level Zero's version
  int symbols_found = 0;        // entry points the library exports, of those joules knows
  int symbols_known = 0;
  // A composite of several GPU backends: the meta of each, in device order (empty otherwise).
  std::vector<backend_meta> parts;
};

// The meta of the GPU backend named `name` ("nvml", ...) within `meta`, a composite or a single
// backend's; nullptr when it is not there.
const backend_meta* find_part(const backend_meta& meta, std::string_view name);

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

  // What `doctor` shows about device `i`: its health readings, GPM, whether its power limit can
  // be changed.  Reads only: it never changes anything on the device (whether this process may
  // change the limit is a question about the process, src/control/permission.hpp).  May be slow.
  // Sampler thread only, before sampling starts.  Never throws.
  virtual device_capabilities probe_capabilities(std::size_t i) {
    (void)i;
    return {};
  }

  // Power-limit control, the one place joules changes hardware state (src/control,
  // docs/tuning.md).  The limit of device `i` now, and its range.  Sampler thread only, at any
  // time (the sampler runs control tasks between its readings).  Never throws.
  virtual power_limit_reading read_power_limit(std::size_t i) {
    (void)i;
    return {
        {control_status::not_supported, "this backend has no power limit to read"}, {}, {}, {}, {}};
  }
  // Sets the power limit of device `i` to `limit_mw` milliwatts, in force from the call on.
  // Sampler thread only.  Never throws.
  virtual control_result set_power_limit(std::size_t i, std::uint32_t limit_mw) {
    (void)i;
    (void)limit_mw;
    return {control_status::not_supported, "this backend has no power limit to set"};
  }

  // The meta of the backend that owns device `i` (a composite's part; this backend's own
  // otherwise): which library sets its power limit, for the journal that restores it.
  virtual const backend_meta& device_meta(std::size_t i) const {
    (void)i;
    return meta();
  }

  // For CUDA_VISIBLE_DEVICES entries naming a MIG instance: the UUID of the GPU that holds it.
  virtual std::optional<std::string> parent_of_mig(std::string_view mig_uuid) {
    (void)mig_uuid;
    return std::nullopt;
  }

  // Lines to show the user about devices that were found but cannot be used (no permission...).
  const std::vector<std::string>& notices() const { return notices_; }

  // What became of CPU and DRAM (open_backend): measured, estimated or not, and why.
  const std::vector<component_status>& components() const { return components_; }

 protected:
  std::vector<std::string> notices_;
  std::vector<component_status> components_;
};

// A vendor library that is not on this machine (dlopen found no such file, or it is not the
// library asked for): `--backend auto` passes over it quietly, while a library that loads and
// fails says why.  `reason` is the short form ("cannot load libamd_smi.so (...)") that auto
// joins with the other vendors' when no GPU is found at all.
class library_not_found : public no_device_error {
 public:
  library_not_found(const std::string& what, std::string reason)
      : no_device_error(what), reason_(std::move(reason)) {}
  const std::string& reason() const noexcept { return reason_; }

 private:
  std::string reason_;
};

// Which components to measure besides (or instead of) the GPUs (--components; docs/carbon.md).
struct component_options {
  bool gpu = true;
  bool cpu = true;
  bool dram = true;
  // --components was given: a named component that cannot be measured is an error, not a note.
  bool named = false;
  // Estimate the CPU from TDP x utilisation where RAPL cannot measure it (--estimate-cpu).
  bool estimate_cpu = false;
  std::optional<double> cpu_tdp_w;  // overrides the TDP table (--cpu-tdp)
  std::string powercap_root;        // empty: JOULES_POWERCAP_ROOT, else /sys/class/powercap
  std::string proc_root;            // empty: JOULES_PROC_ROOT, else /proc (for /proc/stat)
};

}  // namespace joules
