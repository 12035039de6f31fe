#pragma once
// Declares every entry point of nvml_symbols.def with C linkage and default visibility.  The
// definitions in api_*.cpp repeat `extern "C"`, so one whose signature differs from the list is
// a "conflicting declaration of C function" error rather than a silent C++ overload; and
// runtime.cpp takes the address of every entry, so a missing definition fails the link
// (-Wl,--no-undefined).  Which of them a variant exports is decided by its linker version script.

#include "backends/nvml/nvml_abi.hpp"

namespace joules::nvml {
extern "C" {
#define JOULES_NVML_FN(level, ret, name, params) \
  __attribute__((visibility("default"))) ret name params;
#include "backends/nvml/nvml_symbols.def"
#undef JOULES_NVML_FN
}
}  // namespace joules::nvml
