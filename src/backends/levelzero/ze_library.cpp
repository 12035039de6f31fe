#include "backends/levelzero/ze_library.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>

#include "backends/backend.hpp"
#include "backends/dynamic_library.hpp"
#include "util/error.hpp"

namespace joules::ze {
namespace {

// Every handle a two-call enumeration gives (count first, then the handles).
template <class Fn, class... Args>
ze_result_t enumerate(std::vector<void*>& out, Fn fn, Args... args) {
  std::uint32_t n = 0;
  ze_result_t rc = fn(args..., &n, nullptr);
  if (rc != kSuccess || n == 0) return rc;
  std::vector<void*> handles(n);
  rc = fn(args..., &n, handles.data());
  if (rc != kSuccess) return rc;
  handles.resize(n);
  out.insert(out.end(), handles.begin(), handles.end());
  return rc;
}

}  // namespace

int library::known_symbol_count() {
  int n = 0;
#define JOULES_ZE_FN(since, ret, name, params) ++n;
#include "backends/levelzero/ze_symbols.def"
#undef JOULES_ZE_FN
  return n;
}

std::unique_ptr<library> library::open(const std::string& path) {
  const loaded_library loaded = load_library(
      path, "JOULES_LEVEL_ZERO_LIBRARY", {kDefaultName}, "the Level Zero loader",
      "is Intel's GPU driver (level-zero) installed? Set JOULES_LEVEL_ZERO_LIBRARY to the "
      "loader, or try joules with --backend sim");
  std::unique_ptr<library> lib(new library());
  lib->path_ = loaded.path;
  int found = 0;
#define JOULES_ZE_FN(since, ret, name, params) \
  resolve_symbol(loaded.handle, #name, lib->fn_.name, found);
#include "backends/levelzero/ze_symbols.def"
#undef JOULES_ZE_FN
  lib->symbols_ = found;
  lib->init();
  return lib;
}

void library::init() {
  const auto& fn = fn_;
  std::vector<void*> drivers;
  ze_result_t rc = kErrorUninitialized;
  if (fn.zesInit != nullptr && fn.zesDriverGet != nullptr && fn.zesDeviceGet != nullptr) {
    rc = fn.zesInit(0);
    if (rc == kSuccess) {
      init_path_ = "zesInit";
      rc = enumerate(drivers, fn.zesDriverGet);
      for (void* d : drivers) {
        if (rc == kSuccess) rc = enumerate(devices_, fn.zesDeviceGet, d);
      }
    }
  }
  if (init_path_.empty()) {
    // A loader older than zesInit: core handles are Sysman handles when the process started
    // with ZES_ENABLE_SYSMAN=1, which the driver reads at zeInit.
    const char* enabled = std::getenv("ZES_ENABLE_SYSMAN");
    const bool sysman = enabled != nullptr && std::strcmp(enabled, "1") == 0;
    if (!sysman || fn.zeInit == nullptr || fn.zeDriverGet == nullptr || fn.zeDeviceGet == nullptr) {
      throw fatal_error(fmt::format(
          "{} has no zesInit ({}), and this process was not started with ZES_ENABLE_SYSMAN=1, "
          "the older way to reach Level Zero's Sysman; set it, or try joules with --backend sim",
          path_, fn.zesInit == nullptr ? "a loader older than 1.9" : error_string(rc)));
    }
    rc = fn.zeInit(0);
    if (rc != kSuccess) {
      throw fatal_error(
          fmt::format("zeInit failed: {}; try joules with --backend sim", error_string(rc)));
    }
    init_path_ = "zeInit with ZES_ENABLE_SYSMAN=1";
    rc = enumerate(drivers, fn.zeDriverGet);
    for (void* d : drivers) {
      if (rc == kSuccess) rc = enumerate(devices_, fn.zeDeviceGet, d);
    }
  }
  if (rc != kSuccess) {
    const char* hint = rc == kErrorInsufficientPermissions
                           ? "; this user may not read the GPU's telemetry (the render group may)"
                           : "";
    throw fatal_error(
        fmt::format("Level Zero could not list its GPUs: {}{}; try joules with "
                    "--backend sim",
                    error_string(rc), hint));
  }
}

std::string library::error_string(ze_result_t code) const {
  const char* name = nullptr;
  switch (code) {
    case kErrorDeviceLost:
      name = "ZE_RESULT_ERROR_DEVICE_LOST";
      break;
    case kErrorInsufficientPermissions:
      name = "ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS";
      break;
    case kErrorNotAvailable:
      name = "ZE_RESULT_ERROR_NOT_AVAILABLE";
      break;
    case kErrorDependencyUnavailable:
      name = "ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE";
      break;
    case kErrorUninitialized:
      name = "ZE_RESULT_ERROR_UNINITIALIZED";
      break;
    case kErrorUnsupportedFeature:
      name = "ZE_RESULT_ERROR_UNSUPPORTED_FEATURE";
      break;
    case kErrorUnknown:
      name = "ZE_RESULT_ERROR_UNKNOWN";
      break;
    default:
      break;
  }
  if (name != nullptr) return fmt::format("{} (0x{:x})", name, code);
  return fmt::format("Level Zero error 0x{:x}", code);
}

}  // namespace joules::ze
