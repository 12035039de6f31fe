#include "backends/nvml/nvml_library.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <link.h>

#include <cstdlib>

#include "util/error.hpp"

namespace joules::nvml {
namespace {

// The real library path behind a dlopen handle, for `doctor` and session records.
std::string loaded_path(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      map->l_name[0] != '\0') {
    return map->l_name;
  }
  return fallback;
}

template <class Fn>
void resolve(void* handle, const char* name, Fn& slot, int& found) {
  // POSIX guarantees that a dlsym result converts to a function pointer.
  slot = reinterpret_cast<Fn>(dlsym(handle, name));
  if (slot != nullptr) ++found;
}

}  // namespace

int library::known_symbol_count() {
  int n = 0;
#define JOULES_NVML_FN(level, ret, name, params) ++n;
#include "backends/nvml/nvml_symbols.def"
#undef JOULES_NVML_FN
  return n;
}

std::unique_ptr<library> library::open(const std::string& path) {
  std::string file = path;
  if (file.empty()) {
    const char* env = std::getenv("JOULES_NVML_LIBRARY");
    file = (env != nullptr && env[0] != '\0') ? env : kDefaultName;
  }
  // RTLD_LOCAL keeps NVML's symbols out of the global namespace of the process.
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    throw no_device_error(fmt::format(
        "cannot load the NVIDIA management library {} ({}); is the NVIDIA driver installed? "
        "Set JOULES_NVML_LIBRARY to its path, or try joules with --backend sim",
        file, why != nullptr ? why : "unknown reason"));
  }
  std::unique_ptr<library> lib(new library());
  lib->handle_ = handle;
  lib->path_ = loaded_path(handle, file);
  int found = 0;
#define JOULES_NVML_FN(level, ret, name, params) resolve(handle, #name, lib->fn_.name, found);
#include "backends/nvml/nvml_symbols.def"
#undef JOULES_NVML_FN
  lib->symbol_count_ = found;

  const auto& fn = lib->fn_;
  auto init = fn.nvmlInit_v2 != nullptr ? fn.nvmlInit_v2 : fn.nvmlInit;
  lib->count_ =
      fn.nvmlDeviceGetCount_v2 != nullptr ? fn.nvmlDeviceGetCount_v2 : fn.nvmlDeviceGetCount;
  lib->handle_by_index_ = fn.nvmlDeviceGetHandleByIndex_v2 != nullptr
                              ? fn.nvmlDeviceGetHandleByIndex_v2
                              : fn.nvmlDeviceGetHandleByIndex;
  if (init == nullptr || fn.nvmlShutdown == nullptr || lib->count_ == nullptr ||
      lib->handle_by_index_ == nullptr) {
    throw fatal_error(fmt::format(
        "{} is not a usable NVIDIA management library: it lacks nvmlInit, nvmlShutdown, "
        "nvmlDeviceGetCount or nvmlDeviceGetHandleByIndex",
        lib->path_));
  }
  const nvmlReturn_t rc = init();
  if (rc != kSuccess) {
    std::string hint;
    if (rc == kErrorDriverNotLoaded) {
      hint = "; the NVIDIA kernel driver is not loaded (no GPU, or `modprobe nvidia` needed)";
    } else if (rc == kErrorNoPermission) {
      hint = "; this user may not open /dev/nvidia*";
    } else if (rc == kErrorLibRmVersionMismatch) {
      hint = "; the driver was upgraded without reloading the kernel module (reboot)";
    } else if (rc == kErrorUnknown) {
      hint = "; inside a container this often means the container lost its GPUs (recreate it)";
    }
    std::string what = fmt::format(
        "nvmlInit failed: {}{}; try joules with --backend sim to run "
        "without a GPU",
        lib->error_string(rc), hint);
    // No kernel driver: no GPU here.  Any other failure is the driver's.
    if (rc == kErrorDriverNotLoaded) throw no_device_error(what);
    throw fatal_error(what);
  }
  lib->initialised_ = true;
  return lib;
}

library::~library() {
  if (initialised_) fn_.nvmlShutdown();
  // The library stays mapped: NVML starts threads of its own, and unloading code under them is
  // not safe.  The process is about to end anyway.
}

std::string library::error_string(nvmlReturn_t code) const {
  if (fn_.nvmlErrorString != nullptr) {
    const char* s = fn_.nvmlErrorString(code);
    if (s != nullptr) return fmt::format("{} (NVML error {})", s, code);
  }
  return fmt::format("NVML error {}", code);
}

std::string library::driver_version() const {
  char buf[kSystemDriverVersionBufferSize] = {};
  if (fn_.nvmlSystemGetDriverVersion == nullptr ||
      fn_.nvmlSystemGetDriverVersion(buf, sizeof buf) != kSuccess) {
    return {};
  }
  return buf;
}

std::string library::nvml_version() const {
  char buf[kSystemNvmlVersionBufferSize] = {};
  if (fn_.nvmlSystemGetNVMLVersion == nullptr ||
      fn_.nvmlSystemGetNVMLVersion(buf, sizeof buf) != kSuccess) {
    return {};
  }
  return buf;
}

}  // namespace joules::nvml
