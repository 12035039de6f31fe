#pragma once
// `joules doctor`: can joules measure this machine, and are its GPUs healthy?  Opens the
// backend through a sampler, asks every question on the sampler's thread (the only one that
// calls the driver), prints the report and ends with 0 (healthy), 1 (warnings) or 2
// (unhealthy); 3 is doctor's exit status for an error of joules' own (bad options).

#include <optional>
#include <string>
#include <vector>

#include "backends/composite/open_backend.hpp"

namespace joules::session {

// doctor's exit status for an error of joules' own (a bad option, an internal error), apart
// from 0 healthy, 1 warnings and 2 unhealthy (src/health/findings.hpp).
inline constexpr int kDoctorError = 3;

struct doctor_settings {
  backend_options backend;
  std::optional<std::string> gpus;
  bool json = false;
  std::vector<std::string> fail_on;  // checks whose findings are critical
  std::vector<std::string> ignore;   // checks whose findings are set aside
};

// The codes of every check doctor makes (docs/monitor-doctor.md), for --fail-on and --ignore.
std::vector<std::string> doctor_checks();

// Prints the report on stdout (text, or JSON with `json`); returns 0, 1 or 2.
int check(const doctor_settings& settings);

}  // namespace joules::session
