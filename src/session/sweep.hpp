#pragma once
// `joules sweep`: the command (or its first steps) run once at each power limit of a list, and
// what each limit cost: energy and time per step, the Pareto front of the two and its knee, as
// a table, JSON or an SVG picture (docs/tuning.md, "Sweep").  Each run is a `wrap` run with
// its limit set (journalled first) before the command starts and restored after it ends.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "session/measurement.hpp"
#include "session/wrap.hpp"

namespace joules::session {

struct sweep_settings {
  std::vector<std::uint32_t> limits;  // --limits, highest first
  std::string limits_text;
  std::optional<std::uint64_t> steps;  // --steps: measured steps per limit, then the command ends
  std::optional<std::string> svg;      // --svg FILE
  bool json = false;                   // the results as one JSON object on stdout
  bool dry_run = false;
};

// Runs the sweep; 0 when every limit was measured, else the status of the run that failed (the
// sweep stops there; the limits are restored).  Throws usage_error (a limit outside a GPU's
// range, an --svg file that cannot be written) or fatal_error (the GPUs' limits cannot be
// changed, another joules holds one) before the first command starts.
int sweep(const measure_settings& settings, const wrap_settings& steps, const wrap_output& output,
          const sweep_settings& sweep);

}  // namespace joules::session
