#pragma once

#include <memory>
#include <string>

#include "backends/backend.hpp"

namespace joules {

// Loads AMD SMI, else ROCm SMI (see amd::library::open for `amdsmi_library`), enumerates the AMD
// GPUs, a partitioned GPU as one device (docs/amd-notes.md §6), and probes each one's readings.
// Throws library_not_found when neither library is installed, fatal_error when it cannot be
// initialised.
// A `rocm_smi_library` opens that ROCm SMI only.
std::unique_ptr<backend> open_amd_backend(const std::string& amdsmi_library,
                                          const std::string& rocm_smi_library = {});

}  // namespace joules
