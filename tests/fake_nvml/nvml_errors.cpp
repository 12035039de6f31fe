#include "nvml_errors.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace fake_nvml {
namespace {

constexpr std::array<std::pair<const char*, nvmlReturn_t>, 31> kErrorNames = {{
    {"SUCCESS", 0},
    {"UNINITIALIZED", 1},
    {"INVALID_ARGUMENT", 2},
    {"NOT_SUPPORTED", 3},
    {"NO_PERMISSION", 4},
    {"ALREADY_INITIALIZED", 5},
    {"NOT_FOUND", 6},
    {"INSUFFICIENT_SIZE", 7},
    {"INSUFFICIENT_POWER", 8},
    {"DRIVER_NOT_LOADED", 9},
    {"TIMEOUT", 10},
    {"IRQ_ISSUE", 11},
    {"LIBRARY_NOT_FOUND", 12},
    {"FUNCTION_NOT_FOUND", 13},
    {"CORRUPTED_INFOROM", 14},
    {"GPU_IS_LOST", 15},
    {"RESET_REQUIRED", 16},
    {"OPERATING_SYSTEM", 17},
    {"LIB_RM_VERSION_MISMATCH", 18},
    {"IN_USE", 19},
    {"MEMORY", 20},
    {"NO_DATA", 21},
    {"VGPU_ECC_NOT_SUPPORTED", 22},
    {"INSUFFICIENT_RESOURCES", 23},
    {"FREQ_NOT_SUPPORTED", 24},
    {"ARGUMENT_VERSION_MISMATCH", 25},
    {"DEPRECATED", 26},
    {"NOT_READY", 27},
    {"GPU_NOT_FOUND", 28},
    {"INVALID_STATE", 29},
    {"UNKNOWN", 999},
}};

}  // namespace

nvmlReturn_t error_code_from_name(const std::string& name) {
  const std::string bare = name.rfind("NVML_ERROR_", 0) == 0 ? name.substr(11) : name;
  for (const auto& [n, code] : kErrorNames) {
    if (bare == n) return code;
  }
  return -1;
}

}  // namespace fake_nvml
