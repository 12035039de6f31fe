#pragma once
// NVML's side of the scripted faults (tests/fake_common/faults.hpp): its error names.

#include <string>

#include "backends/nvml/nvml_abi.hpp"
#include "faults.hpp"  // tests/fake_common

namespace fake_nvml {

using fake_gpu::fault_set;
using fake_gpu::kForever;
using fake_gpu::reading_kind;
using joules::nvml::nvmlReturn_t;

// nvmlReturn_t from a name such as "UNKNOWN" or "NVML_ERROR_TIMEOUT"; -1 when unknown.
nvmlReturn_t error_code_from_name(const std::string& name);

}  // namespace fake_nvml
