#pragma once

#include <memory>
#include <string>

#include "backends/backend.hpp"

namespace joules {

// Loads HLML (see hlml::library::open for `library`), enumerates the Intel Gaudi devices and
// probes each one's readings (docs/hlml-notes.md).  Throws library_not_found when the library is
// not installed, fatal_error when it cannot be initialised.
std::unique_ptr<backend> open_hlml_backend(const std::string& library);

}  // namespace joules
