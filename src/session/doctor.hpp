#pragma once
// `joules doctor`: can joules measure this machine, and are its GPUs healthy?  Opens the
// backend through a sampler, asks every question on the sampler's thread (the only one that
// calls the driver), prints the report and ends with 0 (healthy), 1 (warnings) or 2
// (unhealthy).

#include <optional>
#include <string>

#include "backends/composite/open_backend.hpp"

namespace joules::session {

struct doctor_settings {
  backend_options backend;
  std::optional<std::string> gpus;
  bool json = false;
};

// Prints the report on stdout (text, or JSON with `json`); returns 0, 1 or 2.
int check(const doctor_settings& settings);

}  // namespace joules::session
