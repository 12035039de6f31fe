#pragma once
// `joules wrap`: the energy of every training step.  The command's stdout and stderr pass
// through joules byte for byte (on pseudo-terminals, so that every language's stdio
// line-buffers them); each line is stamped on arrival and handed to the step parser; step lines
// become boundaries for the sampler, which places energy at those instants from its readings.
// Nothing on the line path waits for the GPU.
//
//   child output ─► line splitter ─► step parser ─► step_windows ─► sampler.boundary(t)
//   sampler ─► finished windows ─► (queue, eventfd) ─► wrap_report ─► records, annotations

#include <optional>
#include <string>
#include <vector>

#include "session/measurement.hpp"
#include "session/wrap_report.hpp"

namespace joules::session {

// How wrap treats the command's output.
struct wrap_output {
  std::vector<std::string> step_regexes;  // --step-regex, tried before the built-in formats
  // --inline (true) / --no-inline (false); unset: on the streams that are terminals.
  std::optional<bool> inline_energy;
  bool use_pty = true;  // false: --no-pty
};

// Runs settings.command and measures the energy of each of its steps; returns the exit status
// joules ends with (the command's).  Throws usage_error (a bad --step-regex) or fatal_error
// before the command starts.
int wrap(const measure_settings& settings, const wrap_settings& steps, const wrap_output& output);

}  // namespace joules::session
