#pragma once

#include <memory>
#include <string>

#include "backends/backend.hpp"

namespace joules {

// Loads the Level Zero loader (see ze::library::open for `library_path`), enumerates the Intel
// GPUs through Sysman and finds each one's energy counter.  Throws library_not_found when there
// is no loader, fatal_error when Sysman cannot be initialised.
std::unique_ptr<backend> open_level_zero_backend(const std::string& library_path);

}  // namespace joules
