#pragma once
// Declares every entry point of amdsmi_symbols.def and rocm_smi_symbols.def with C linkage and
// default visibility.  The definitions in api_*.cpp repeat `extern "C"`, so one whose signature
// differs from the lists does not compile; which of them a library exports is decided by its
// linker version script (CMakeLists.txt).

#include <cstddef>
#include <cstdint>

#include "backends/amdsmi/amd_abi.hpp"

namespace joules::amd {
extern "C" {
#define JOULES_AMDSMI_FN(since, ret, name, params) \
  __attribute__((visibility("default"))) ret name params;
#include "backends/amdsmi/amdsmi_symbols.def"
#undef JOULES_AMDSMI_FN
#define JOULES_RSMI_FN(since, ret, name, params) \
  __attribute__((visibility("default"))) ret name params;
#include "backends/amdsmi/rocm_smi_symbols.def"
#undef JOULES_RSMI_FN
}
}  // namespace joules::amd
