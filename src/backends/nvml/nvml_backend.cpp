// The NVML backend: enumerates GPUs, probes each one's capabilities once, and reads energy and
// power.  Reading prefers one nvmlDeviceGetFieldValues call that returns the energy counter and
// the instantaneous power together (one NVML call per GPU per tick); it falls back to the
// individual getters on drivers without the fields.  Health readings are nvml_health.cpp's.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "backends/backend.hpp"
#include "backends/nvml/nvml_backend.hpp"
#include "backends/nvml/nvml_decode.hpp"
#include "backends/nvml/nvml_health.hpp"
#include "backends/nvml/nvml_library.hpp"
#include "util/error.hpp"

namespace joules::nvml {
namespace {

std::string architecture_name(nvmlDeviceArchitecture_t a) {
  switch (a) {
    case kArchKepler:
      return "kepler";
    case kArchMaxwell:
      return "maxwell";
    case kArchPascal:
      return "pascal";
    case kArchVolta:
      return "volta";
    case kArchTuring:
      return "turing";
    case kArchAmpere:
      return "ampere";
    case kArchAda:
      return "ada";
    case kArchHopper:
      return "hopper";
    case kArchBlackwell:
      return "blackwell";
    case kArchRubin:
      return "rubin";
    default:
      return {};
  }
}

// nvmlDeviceGetPowerUsage is a 1 s average "on Ampere (except GA100) or newer"
// (docs/nvml-notes.md §3.1).
bool power_usage_is_averaged(nvmlDeviceArchitecture_t arch, const std::string& name) {
  if (arch == kArchUnknown || arch < kArchAmpere) return false;
  const bool ga100 =
      name.find("A100") != std::string::npos || name.find("A30") != std::string::npos;
  return !(arch == kArchAmpere && ga100);
}

std::optional<watts> milliwatts(nvmlDevice_t h, nvmlReturn_t (*fn)(nvmlDevice_t, unsigned int*)) {
  unsigned int mw = 0;
  if (fn == nullptr || fn(h, &mw) != kSuccess) return std::nullopt;
  return watts{mw / 1000.0};
}

class nvml_backend final : public backend {
 public:
  explicit nvml_backend(std::unique_ptr<library> lib) : lib_(std::move(lib)) {
    meta_.backend = "nvml";
    meta_.library_path = lib_->path();
    meta_.driver_version = lib_->driver_version();
    meta_.library_version = lib_->nvml_version();
    meta_.symbols_found = lib_->symbol_count();
    meta_.symbols_known = library::known_symbol_count();
    enumerate();
  }

  const backend_meta& meta() const override { return meta_; }
  const std::vector<device_info>& devices() const override { return infos_; }

  device_reading read(std::size_t i, read_what what) override {
    // A GPU that fell off the bus stays lost (read_status::lost): asking again would only cost
    // time, and a GPU in that state can take seconds to answer each call.
    if (states_[i].lost) return failed(kErrorGpuIsLost);
    device_reading r = read_device(i, what);
    if (r.status == read_status::lost) states_[i].lost = true;
    return r;
  }

  device_reading read_device(std::size_t i, read_what what) {
    device_state& d = states_[i];
    device_reading r;
    if (what == read_what::power && (d.field_power || d.power_usage)) {
      if (d.field_power) {
        read_power_instant(d, r);
      } else {
        read_power_usage(d, r);
      }
      return r;
    }
    if (d.use_fields) {
      // Energy and instantaneous power in one call.
      std::array<nvmlFieldValue_t, 2> f{};
      f[0].fieldId = d.energy_field;
      f[1].fieldId = kFiDevPowerInstant;
      const int n = (what == read_what::counter || !d.field_power) ? 1 : 2;
      const nvmlReturn_t rc = lib_->fn().nvmlDeviceGetFieldValues(d.handle, n, f.data());
      if (rc != kSuccess) return failed(rc);
      if (f[0].nvmlReturn == kSuccess) {
        r.energy_mj = field_as_u64(f[0]);
      } else if (!note(r, f[0].nvmlReturn, /*counter=*/true)) {
        return failed(f[0].nvmlReturn);
      }
      if (n == 2) {
        if (f[1].nvmlReturn == kSuccess) {
          r.power = watts{field_as_double(f[1]) / 1000.0};
        } else if (!note(r, f[1].nvmlReturn, /*counter=*/false)) {
          return failed(f[1].nvmlReturn);
        }
      }
      if (what != read_what::counter && !d.field_power && d.power_usage) read_power_usage(d, r);
      return r;
    }
    if (d.counter) {
      unsigned long long mj = 0;
      const nvmlReturn_t rc = lib_->fn().nvmlDeviceGetTotalEnergyConsumption(d.handle, &mj);
      if (rc == kSuccess) {
        r.energy_mj = mj;
      } else if (!note(r, rc, /*counter=*/true)) {
        return failed(rc);
      }
    }
    if (what != read_what::counter) {
      if (d.field_power) {
        read_power_instant(d, r);
      } else if (d.power_usage) {
        read_power_usage(d, r);
      }
    }
    return r;
  }

  health_reading read_health(std::size_t i) override {
    if (states_[i].lost) return {};  // as read(): nothing more to learn from a lost GPU
    return health_[i]->read();
  }

  device_capabilities probe_capabilities(std::size_t i) override {
    if (states_[i].lost) return {};  // nothing to learn from a lost GPU
    const auto& fn = lib_->fn();
    const nvmlDevice_t h = states_[i].handle;
    device_capabilities c;
    health_reader& reader = *health_[i];
    if (!reader.probed()) (void)reader.read();
    c.health_readings = reader.supported();
    c.gpm = reader.gpm_supported();
    // Whether the limit can be changed at all: the driver has the call and a range.  Whether this
    // process may change it is not asked of the driver (that would take a set): it is a question
    // about the process (src/control/permission.hpp, docs/nvml-notes.md §4).
    const device_info& info = infos_[i];
    unsigned int current = 0;
    const bool readable = fn.nvmlDeviceGetPowerManagementLimit != nullptr &&
                          fn.nvmlDeviceGetPowerManagementLimit(h, &current) == kSuccess;
    const bool settable = fn.nvmlDeviceSetPowerManagementLimit != nullptr ||
                          fn.nvmlDeviceSetPowerManagementLimit_v2 != nullptr;
    c.power_limit_control = readable && settable && info.min_power_limit && info.max_power_limit &&
                            info.max_power_limit->value > info.min_power_limit->value;
    unsigned int mode = 0;
    unsigned int pending = 0;
    if (fn.nvmlDeviceGetMigMode != nullptr &&
        fn.nvmlDeviceGetMigMode(h, &mode, &pending) == kSuccess) {
      c.mig_enabled = mode == kDeviceMigEnable;
    }
    int major = 0;
    int minor = 0;
    if (fn.nvmlDeviceGetCudaComputeCapability != nullptr &&
        fn.nvmlDeviceGetCudaComputeCapability(h, &major, &minor) == kSuccess) {
      c.compute_capability_major = major;
      c.compute_capability_minor = minor;
    }
    return c;
  }

  power_limit_reading read_power_limit(std::size_t i) override {
    const auto& fn = lib_->fn();
    power_limit_reading r;
    if (states_[i].lost) {
      r.result = control_failure(kErrorGpuIsLost);
      return r;
    }
    const nvmlDevice_t h = states_[i].handle;
    unsigned int mw = 0;
    nvmlReturn_t rc = fn.nvmlDeviceGetPowerManagementLimit == nullptr
                          ? kErrorFunctionNotFound
                          : fn.nvmlDeviceGetPowerManagementLimit(h, &mw);
    if (rc == kSuccess) r.current_mw = mw;
    if (fn.nvmlDeviceGetPowerManagementDefaultLimit != nullptr &&
        fn.nvmlDeviceGetPowerManagementDefaultLimit(h, &mw) == kSuccess) {
      r.default_mw = mw;
    }
    unsigned int lo = 0;
    unsigned int hi = 0;
    const nvmlReturn_t range = fn.nvmlDeviceGetPowerManagementLimitConstraints == nullptr
                                   ? kErrorFunctionNotFound
                                   : fn.nvmlDeviceGetPowerManagementLimitConstraints(h, &lo, &hi);
    if (range == kSuccess) {
      r.min_mw = lo;
      r.max_mw = hi;
    }
    if (rc == kSuccess) rc = range;
    if (rc == kSuccess && hi <= lo) rc = kErrorNotSupported;  // a range of one value: no control
    if (rc != kSuccess) r.result = control_failure(rc);
    return r;
  }

  control_result set_power_limit(std::size_t i, std::uint32_t limit_mw) override {
    const auto& fn = lib_->fn();
    if (states_[i].lost) return control_failure(kErrorGpuIsLost);
    const nvmlDevice_t h = states_[i].handle;
    nvmlReturn_t rc = kErrorFunctionNotFound;
    // The unversioned call is in every driver; _v2 (12.2 header on) only where it is missing.
    if (fn.nvmlDeviceSetPowerManagementLimit != nullptr) {
      rc = fn.nvmlDeviceSetPowerManagementLimit(h, limit_mw);
    } else if (fn.nvmlDeviceSetPowerManagementLimit_v2 != nullptr) {
      nvmlPowerValue_v2_t v{};
      v.version = kPowerValueV2Version;
      v.powerScope = static_cast<unsigned char>(kPowerScopeGpu);
      v.powerValueMw = limit_mw;
      rc = fn.nvmlDeviceSetPowerManagementLimit_v2(h, &v);
    }
    if (rc == kErrorGpuIsLost) states_[i].lost = true;
    return rc == kSuccess ? control_result{} : control_failure(rc);
  }

  std::optional<std::string> parent_of_mig(std::string_view mig_uuid) override {
    const auto& fn = lib_->fn();
    if (fn.nvmlDeviceGetHandleByUUID == nullptr ||
        fn.nvmlDeviceGetDeviceHandleFromMigDeviceHandle == nullptr ||
        fn.nvmlDeviceGetUUID == nullptr) {
      return std::nullopt;
    }
    nvmlDevice_t mig = nullptr;
    nvmlDevice_t parent = nullptr;
    const std::string uuid(mig_uuid);
    if (fn.nvmlDeviceGetHandleByUUID(uuid.c_str(), &mig) != kSuccess) return std::nullopt;
    if (fn.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig, &parent) != kSuccess)
      return std::nullopt;
    char buf[kDeviceUuidBufferSize] = {};
    if (fn.nvmlDeviceGetUUID(parent, buf, sizeof buf) != kSuccess) return std::nullopt;
    return std::string(buf);
  }

 private:
  struct device_state {
    nvmlDevice_t handle = nullptr;
    bool counter = false;     // nvmlDeviceGetTotalEnergyConsumption works
    bool use_fields = false;  // read the counter (and power) through field values
    unsigned int energy_field = kFiDevTotalEnergyConsumption;
    bool field_power = false;  // NVML_FI_DEV_POWER_INSTANT works
    bool power_usage = false;  // nvmlDeviceGetPowerUsage works
    bool lost = false;         // a read answered NVML_ERROR_GPU_IS_LOST
  };

  control_result control_failure(nvmlReturn_t rc) const {
    control_result r;
    r.detail = lib_->error_string(rc);
    switch (rc) {
      case kErrorNoPermission:
        r.status = control_status::no_permission;
        break;
      case kErrorNotSupported:
      case kErrorFunctionNotFound:
        r.status = control_status::not_supported;
        break;
      case kErrorInvalidArgument:
        r.status = control_status::invalid;
        break;
      case kErrorGpuIsLost:
        r.status = control_status::lost;
        break;
      default:
        r.status = control_status::error;
        break;
    }
    return r;
  }

  static device_reading failed(nvmlReturn_t rc) {
    device_reading r;
    r.status = rc == kErrorGpuIsLost ? read_status::lost : read_status::error;
    r.error_code = rc;
    return r;
  }

  // NOT_SUPPORTED mid-run turns one capability off; any other error fails the read.
  static bool note(device_reading& r, nvmlReturn_t rc, bool counter) {
    if (rc != kErrorNotSupported) return false;
    (counter ? r.counter_unsupported : r.power_unsupported) = true;
    return true;
  }

  // NVML_FI_DEV_POWER_INSTANT into r.power; r becomes the failure when the call fails.
  void read_power_instant(const device_state& d, device_reading& r) {
    nvmlFieldValue_t f{};
    f.fieldId = kFiDevPowerInstant;
    const nvmlReturn_t rc = lib_->fn().nvmlDeviceGetFieldValues(d.handle, 1, &f);
    const nvmlReturn_t status = rc != kSuccess ? rc : f.nvmlReturn;
    if (status == kSuccess) {
      r.power = watts{field_as_double(f) / 1000.0};
    } else if (!note(r, status, /*counter=*/false)) {
      r = failed(status);
    }
  }

  void read_power_usage(const device_state& d, device_reading& r) {
    unsigned int mw = 0;
    const nvmlReturn_t rc = lib_->fn().nvmlDeviceGetPowerUsage(d.handle, &mw);
    if (rc == kSuccess) {
      r.power = watts{mw / 1000.0};
    } else if (!note(r, rc, /*counter=*/false)) {
      r = failed(rc);
    }
  }

  void enumerate() {
    unsigned int count = 0;
    const nvmlReturn_t rc = lib_->device_count(&count);
    if (rc != kSuccess) {
      throw fatal_error(fmt::format("nvmlDeviceGetCount failed: {}", lib_->error_string(rc)));
    }
    for (unsigned int i = 0; i < count; ++i) {
      nvmlDevice_t h = nullptr;
      const nvmlReturn_t hrc = lib_->device_handle(i, &h);
      if (hrc == kErrorNoPermission) {
        notices_.push_back(fmt::format(
            "GPU {} skipped: no permission to open it (NVML_ERROR_NO_PERMISSION); it is not "
            "measured",
            i));
        continue;
      }
      if (hrc != kSuccess) {
        // The driver lists it, but it answers nothing (NVML_ERROR_GPU_IS_LOST: it fell off the
        // bus before joules started): listed as lost, so that every view shows it from the
        // first moment, as one that is lost later.
        unreadable(i, fmt::format("its handle could not be had: {}", lib_->error_string(hrc)));
        continue;
      }
      probe(i, h);
    }
  }

  void unreadable(unsigned int index, std::string why) {
    device_info info;
    info.index = index;
    info.vendor = "nvidia";
    info.unreadable = std::move(why);
    device_state st;
    st.lost = true;
    infos_.push_back(std::move(info));
    states_.push_back(st);
    health_.push_back(std::make_unique<health_reader>(lib_->fn(), nullptr));
  }

  void probe(unsigned int index, nvmlDevice_t h) {
    const auto& fn = lib_->fn();
    device_info info;
    device_state st;
    st.handle = h;
    // Start-up time is NVML calls (tens of microseconds each, times every GPU): what can be
    // had from one nvmlDeviceGetFieldValues call is asked for in one.  The index is the one the
    // handle was asked for (nvmlDeviceGetIndex would answer the same).
    info.index = index;
    info.vendor = "nvidia";
    char buf[kDeviceUuidBufferSize] = {};
    if (fn.nvmlDeviceGetName != nullptr && fn.nvmlDeviceGetName(h, buf, sizeof buf) == kSuccess) {
      info.name = buf;
    }
    std::memset(buf, 0, sizeof buf);
    if (fn.nvmlDeviceGetUUID != nullptr && fn.nvmlDeviceGetUUID(h, buf, sizeof buf) == kSuccess) {
      info.uuid = buf;
    }
    auto pci_fn = fn.nvmlDeviceGetPciInfo_v3 != nullptr   ? fn.nvmlDeviceGetPciInfo_v3
                  : fn.nvmlDeviceGetPciInfo_v2 != nullptr ? fn.nvmlDeviceGetPciInfo_v2
                                                          : fn.nvmlDeviceGetPciInfo;
    nvmlPciInfo_t pci{};
    if (pci_fn != nullptr && pci_fn(h, &pci) == kSuccess) {
      pci.busId[sizeof pci.busId - 1] = '\0';
      info.pci_bus_id = pci.busId;
    }
    nvmlDeviceArchitecture_t arch = kArchUnknown;
    if (fn.nvmlDeviceGetArchitecture != nullptr &&
        fn.nvmlDeviceGetArchitecture(h, &arch) == kSuccess) {
      info.architecture = architecture_name(arch);
    } else {
      arch = kArchUnknown;
    }

    // Energy counter, instantaneous power and the power limits through the fields (12.2+
    // drivers have them all), then the getters for whatever the fields did not answer (some
    // drivers have one and not the other).
    std::optional<unsigned int> limit_mw[4];  // min, max, default, current
    // The last error, other than NOT_SUPPORTED, that a reading of energy or power answered.
    std::optional<nvmlReturn_t> failure;
    auto failed_with = [&](nvmlReturn_t rc) {
      if (rc != kSuccess && rc != kErrorNotSupported) failure = rc;
      return rc == kSuccess;
    };
    if (fn.nvmlDeviceGetFieldValues != nullptr) {
      std::array<nvmlFieldValue_t, 7> f{};
      f[0].fieldId = kFiDevTotalEnergyConsumption;
      f[1].fieldId = kFiDevEnergy;
      f[2].fieldId = kFiDevPowerInstant;
      f[3].fieldId = kFiDevPowerMinLimit;
      f[4].fieldId = kFiDevPowerMaxLimit;
      f[5].fieldId = kFiDevPowerDefaultLimit;
      f[6].fieldId = kFiDevPowerCurrentLimit;
      const nvmlReturn_t frc = fn.nvmlDeviceGetFieldValues(h, static_cast<int>(f.size()), f.data());
      if (frc != kSuccess) failure = frc;
      if (frc == kSuccess) {
        for (std::size_t k = 0; k < 3; ++k) {
          if (f[k].nvmlReturn != kSuccess && f[k].nvmlReturn != kErrorNotSupported) {
            failure = f[k].nvmlReturn;
          }
        }
        st.field_power = f[2].nvmlReturn == kSuccess;
        if (f[0].nvmlReturn == kSuccess || f[1].nvmlReturn == kSuccess) {
          st.use_fields = true;
          st.counter = true;
          st.energy_field =
              f[0].nvmlReturn == kSuccess ? kFiDevTotalEnergyConsumption : kFiDevEnergy;
        }
        for (std::size_t k = 0; k < 4; ++k) {
          const nvmlFieldValue_t& v = f[3 + k];
          const double mw = field_as_double(v);
          if (v.nvmlReturn == kSuccess && mw > 0.0 && mw < 1e8) {
            limit_mw[k] = static_cast<unsigned int>(mw);
          }
        }
      }
    }
    if (!st.counter && fn.nvmlDeviceGetTotalEnergyConsumption != nullptr) {
      unsigned long long mj = 0;
      st.counter = failed_with(fn.nvmlDeviceGetTotalEnergyConsumption(h, &mj));
    }
    if (!st.field_power && fn.nvmlDeviceGetPowerUsage != nullptr) {
      unsigned int mw = 0;
      st.power_usage = failed_with(fn.nvmlDeviceGetPowerUsage(h, &mw));
    }
    if (!st.counter && !st.field_power && !st.power_usage && failure) {
      // Neither energy nor power could be read, and not because the GPU lacks them: it is
      // shown as lost, as one that stops answering later is.
      info.unreadable = fmt::format("every reading of its energy and power failed: {}",
                                    lib_->error_string(*failure));
      st.lost = true;
    }
    info.has_energy_counter = st.counter;
    if (st.field_power) {
      info.power = power_source::field_instant;
    } else if (st.power_usage) {
      info.power = power_source::power_usage;
      if (power_usage_is_averaged(arch, info.name)) info.power_window = seconds(1.0);
    }

    auto from_field = [&](std::size_t k) -> std::optional<watts> {
      return limit_mw[k] ? std::optional<watts>(watts{*limit_mw[k] / 1000.0}) : std::nullopt;
    };
    info.power_limit = from_field(3);
    if (!info.power_limit) info.power_limit = milliwatts(h, fn.nvmlDeviceGetEnforcedPowerLimit);
    if (!info.power_limit) info.power_limit = milliwatts(h, fn.nvmlDeviceGetPowerManagementLimit);
    info.default_power_limit = from_field(2);
    if (!info.default_power_limit) {
      info.default_power_limit = milliwatts(h, fn.nvmlDeviceGetPowerManagementDefaultLimit);
    }
    info.min_power_limit = from_field(0);
    info.max_power_limit = from_field(1);
    if ((!info.min_power_limit || !info.max_power_limit) &&
        fn.nvmlDeviceGetPowerManagementLimitConstraints != nullptr) {
      unsigned int lo = 0;
      unsigned int hi = 0;
      if (fn.nvmlDeviceGetPowerManagementLimitConstraints(h, &lo, &hi) == kSuccess) {
        info.min_power_limit = watts{lo / 1000.0};
        info.max_power_limit = watts{hi / 1000.0};
      }
    }
    infos_.push_back(std::move(info));
    states_.push_back(st);
    health_.push_back(std::make_unique<health_reader>(fn, h));
  }

  std::unique_ptr<library> lib_;
  backend_meta meta_;
  std::vector<device_info> infos_;
  std::vector<device_state> states_;
  // After lib_: destroyed first, while the library (and its GPM samples) are still there.
  std::vector<std::unique_ptr<health_reader>> health_;
};

}  // namespace
}  // namespace joules::nvml

namespace joules {

std::unique_ptr<backend> open_nvml_backend(const std::string& library_path) {
  return std::make_unique<nvml::nvml_backend>(nvml::library::open(library_path));
}

}  // namespace joules
