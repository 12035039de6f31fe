#include "backends/amdsmi/amd_library.hpp"

#include <fmt/format.h>

#include <array>
#include <cstddef>

#include "backends/backend.hpp"
#include "backends/dynamic_library.hpp"
#include "util/error.hpp"

namespace joules::amd {
namespace {

constexpr const char* kHint =
    "is ROCm installed? Set JOULES_AMDSMI_LIBRARY (or JOULES_ROCM_SMI_LIBRARY) to the library, "
    "or try joules with --backend sim";

}  // namespace

std::unique_ptr<library> library::open(const std::string& amdsmi_path,
                                       const std::string& rocm_smi_path) {
  std::unique_ptr<library> lib(new library());
  loaded_library loaded;
  try {
    if (!rocm_smi_path.empty()) {
      loaded = load_library(rocm_smi_path, "JOULES_ROCM_SMI_LIBRARY",
                            {kRocmSmiName, kRocmSmiRocmPath}, "ROCm SMI", kHint);
    } else {
      loaded = load_library(amdsmi_path, "JOULES_AMDSMI_LIBRARY", {kAmdsmiName, kAmdsmiRocmPath},
                            "AMD SMI", kHint);
      lib->amdsmi_ = true;
    }
  } catch (const library_not_found& amdsmi) {
    if (!rocm_smi_path.empty()) throw;
    try {
      loaded = load_library({}, "JOULES_ROCM_SMI_LIBRARY", {kRocmSmiName, kRocmSmiRocmPath},
                            "ROCm SMI", kHint);
    } catch (const library_not_found& rsmi) {
      const std::string reason = fmt::format("{}; {}", amdsmi.reason(), rsmi.reason());
      throw library_not_found(fmt::format("{}; {}", reason, kHint), reason);
    }
  }
  lib->path_ = loaded.path;
  void* handle = loaded.handle;
  int found = 0;
  if (lib->amdsmi_) {
#define JOULES_AMDSMI_FN(since, ret, name, params) \
  resolve_symbol(handle, #name, lib->smi_.name, found);
#include "backends/amdsmi/amdsmi_symbols.def"
#undef JOULES_AMDSMI_FN
    lib->symbols_ = found;
    lib->init_amdsmi();
  } else {
#define JOULES_RSMI_FN(since, ret, name, params) \
  resolve_symbol(handle, #name, lib->rsmi_.name, found);
#include "backends/amdsmi/rocm_smi_symbols.def"
#undef JOULES_RSMI_FN
    lib->symbols_ = found;
    lib->init_rsmi();
  }
  return lib;
}

void library::init_amdsmi() {
  const auto& fn = smi_;
  if (fn.amdsmi_init == nullptr || fn.amdsmi_shut_down == nullptr ||
      fn.amdsmi_get_socket_handles == nullptr || fn.amdsmi_get_processor_handles == nullptr) {
    throw fatal_error(
        fmt::format("{} is not a usable AMD SMI library: it lacks amdsmi_init, amdsmi_shut_down, "
                    "amdsmi_get_socket_handles or amdsmi_get_processor_handles",
                    path_));
  }
  const amdsmi_status_t rc = fn.amdsmi_init(kAmdsmiInitAmdGpus);
  if (rc != kAmdsmiSuccess) {
    std::string hint;
    if (rc == kAmdsmiDriverNotLoaded) hint = "; the amdgpu kernel driver is not loaded";
    if (rc == kAmdsmiNoPerm) {
      hint =
          "; this user may not open /dev/kfd or /dev/dri/renderD* (the render and video "
          "groups may)";
    }
    throw fatal_error(fmt::format("amdsmi_init failed: {}{}; try joules with --backend sim",
                                  error_string(rc), hint));
  }
  initialised_ = true;
  if (fn.amdsmi_get_lib_version != nullptr) {
    alignas(8) std::array<std::byte, 256> buf{};
    if (fn.amdsmi_get_lib_version(buf.data()) == kAmdsmiSuccess) {
      smi_version_ = decode_version(buf);
      version_ =
          fmt::format("{}.{}.{}", smi_version_.major, smi_version_.minor, smi_version_.release);
    }
  }
}

void library::init_rsmi() {
  const auto& fn = rsmi_;
  if (fn.rsmi_init == nullptr || fn.rsmi_shut_down == nullptr ||
      fn.rsmi_num_monitor_devices == nullptr) {
    throw fatal_error(
        fmt::format("{} is not a usable ROCm SMI library: it lacks rsmi_init, rsmi_shut_down or "
                    "rsmi_num_monitor_devices",
                    path_));
  }
  const rsmi_status_t rc = fn.rsmi_init(0);
  if (rc != kRsmiSuccess) {
    const char* hint =
        rc == kRsmiPermission ? "; this user may not read the GPU's sysfs files" : "";
    throw fatal_error(fmt::format("rsmi_init failed: {}{}; try joules with --backend sim",
                                  error_string(rc), hint));
  }
  initialised_ = true;
  rsmi_version_t v{};
  if (fn.rsmi_version_get != nullptr && fn.rsmi_version_get(&v) == kRsmiSuccess) {
    version_ = fmt::format("{}.{}.{}", v.major, v.minor, v.patch);
  }
}

library::~library() {
  if (!initialised_) return;
  if (amdsmi_) {
    smi_.amdsmi_shut_down();
  } else {
    rsmi_.rsmi_shut_down();
  }
  // The library stays mapped, as NVML does: threads of its own may still run in it.
}

std::string library::error_string(std::uint32_t code) const {
  const char* s = nullptr;
  if (amdsmi_) {
    if (smi_.amdsmi_status_code_to_string != nullptr &&
        smi_.amdsmi_status_code_to_string(code, &s) == kAmdsmiSuccess && s != nullptr) {
      return fmt::format("{} (AMD SMI error {})", s, code);
    }
    return fmt::format("AMD SMI error {}", code);
  }
  if (rsmi_.rsmi_status_string != nullptr && rsmi_.rsmi_status_string(code, &s) == kRsmiSuccess &&
      s != nullptr) {
    return fmt::format("{} (ROCm SMI error {})", s, code);
  }
  return fmt::format("ROCm SMI error {}", code);
}

int library::known_symbol_count() const {
  int n = 0;
  if (amdsmi_) {
#define JOULES_AMDSMI_FN(since, ret, name, params) ++n;
#include "backends/amdsmi/amdsmi_symbols.def"
#undef JOULES_AMDSMI_FN
  } else {
#define JOULES_RSMI_FN(since, ret, name, params) ++n;
#include "backends/amdsmi/rocm_smi_symbols.def"
#undef JOULES_RSMI_FN
  }
  return n;
}

}  // namespace joules::amd
