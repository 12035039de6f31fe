#include "backends/hlml/hlml_library.hpp"

#include <fmt/format.h>

#include "backends/backend.hpp"
#include "backends/dynamic_library.hpp"
#include "util/error.hpp"

namespace joules::hlml {

const char* return_name(hlml_return_t code) {
  switch (code) {
    case kSuccess:
      return "HLML_SUCCESS";
    case kUninitialized:
      return "HLML_ERROR_UNINITIALIZED";
    case kInvalidArgument:
      return "HLML_ERROR_INVALID_ARGUMENT";
    case kNotSupported:
      return "HLML_ERROR_NOT_SUPPORTED";
    case kAlreadyInitialized:
      return "HLML_ERROR_ALREADY_INITIALIZED";
    case kNotFound:
      return "HLML_ERROR_NOT_FOUND";
    case kInsufficientSize:
      return "HLML_ERROR_INSUFFICIENT_SIZE";
    case kDriverNotLoaded:
      return "HLML_ERROR_DRIVER_NOT_LOADED";
    case kTimeout:
      return "HLML_ERROR_TIMEOUT";
    case kAipIsLost:
      return "HLML_ERROR_AIP_IS_LOST";
    case kMemory:
      return "HLML_ERROR_MEMORY";
    case kNoData:
      return "HLML_ERROR_NO_DATA";
    case kUnknown:
      return "HLML_ERROR_UNKNOWN";
    default:
      return nullptr;
  }
}

int library::known_symbol_count() {
  int n = 0;
#define JOULES_HLML_FN(since, ret, name, params) ++n;
#include "backends/hlml/hlml_symbols.def"
#undef JOULES_HLML_FN
  return n;
}

std::string library::error_string(hlml_return_t code) {
  const char* name = return_name(code);
  if (name == nullptr) return fmt::format("HLML error {}", code);
  return fmt::format("{} (HLML error {})", name, code);
}

std::unique_ptr<library> library::open(const std::string& path) {
  const loaded_library loaded = load_library(
      path, "JOULES_HLML_LIBRARY", {kDefaultName, kHabanaPath}, "HLML",
      "is Habana's driver (habanalabs) installed? Set JOULES_HLML_LIBRARY to libhlml.so, or try "
      "joules with --backend sim");
  std::unique_ptr<library> lib(new library());
  lib->path_ = loaded.path;
  int found = 0;
#define JOULES_HLML_FN(since, ret, name, params) \
  resolve_symbol(loaded.handle, #name, lib->fn_.name, found);
#include "backends/hlml/hlml_symbols.def"
#undef JOULES_HLML_FN
  lib->symbols_ = found;
  const auto& fn = lib->fn_;
  if (fn.hlml_init == nullptr || fn.hlml_shutdown == nullptr ||
      fn.hlml_device_get_count == nullptr || fn.hlml_device_get_handle_by_index == nullptr) {
    throw fatal_error(
        fmt::format("{} is not a usable HLML library: it lacks hlml_init, hlml_shutdown, "
                    "hlml_device_get_count or hlml_device_get_handle_by_index",
                    lib->path_));
  }
  const hlml_return_t rc = fn.hlml_init();
  if (rc != kSuccess) {
    const char* hint = rc == kDriverNotLoaded ? "; the habanalabs kernel driver is not loaded" : "";
    throw fatal_error(fmt::format("hlml_init failed: {}{}; try joules with --backend sim",
                                  error_string(rc), hint));
  }
  lib->initialised_ = true;
  return lib;
}

library::~library() {
  if (initialised_) fn_.hlml_shutdown();
  // The library stays mapped, as NVML does: threads of its own may still run in it.
}

}  // namespace joules::hlml
