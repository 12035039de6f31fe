#pragma once
// `joules run`: one command measured from its start to its exit, with no interference with it:
// its stdin, stdout and stderr are its own, signals joules receives go to its process group, and
// joules ends with its exit status.

#include "session/measurement.hpp"

namespace joules::session {

// Runs settings.command and measures it; returns the exit status joules ends with (the
// command's, 128+N after death by signal N).  Throws usage_error or fatal_error before the
// command starts.
int run(const measure_settings& settings);

}  // namespace joules::session
