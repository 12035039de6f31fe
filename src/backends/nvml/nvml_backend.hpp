#pragma once

#include <memory>
#include <string>

#include "backends/backend.hpp"

namespace joules {

// Loads NVML (see nvml::library::open for `library_path`), enumerates and probes every GPU.
// Throws fatal_error when NVML cannot be loaded or initialised.
std::unique_ptr<backend> open_nvml_backend(const std::string& library_path);

}  // namespace joules
