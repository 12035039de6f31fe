#pragma once
// Declares every entry point of ze_symbols.def with C linkage and default visibility; the
// definitions in api_sysman.cpp repeat `extern "C"`, so one whose signature differs does not
// compile.  Which of them a variant exports is decided by its linker version script.

#include <cstdint>

#include "backends/levelzero/ze_abi.hpp"

namespace joules::ze {
extern "C" {
#define JOULES_ZE_FN(since, ret, name, params) \
  __attribute__((visibility("default"))) ret name params;
#include "backends/levelzero/ze_symbols.def"
#undef JOULES_ZE_FN
}
}  // namespace joules::ze
