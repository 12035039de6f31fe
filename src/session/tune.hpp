#pragma once
// `joules tune`: the command runs as under `joules wrap`; during its first steps the GPUs' power
// limit is set to one limit after another, each measured over a few steps (energy and time per
// step from wrap's step windows), and the limit that meets the goal is kept for the rest of the
// run.  Every limit changed is journalled first and restored on every exit path
// (src/control/journal.hpp); docs/tuning.md.
//
//   step line ─► wrap's loop ─► tune_hooks::on_step: switch limits at a step ─► sampler::post
//   sampler ─► windows ─► tune_hooks::on_window: which limit each step ran at, J/step, s/step

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "session/measurement.hpp"
#include "session/wrap.hpp"
#include "tuning/goal.hpp"

namespace joules::session {

struct tune_settings {
  tuning::goal goal;
  // --limits: the limits tune may use (parsed, highest first) and the text as given; empty: every
  // limit of the GPUs' range on a grid of limit_step_mw.
  std::vector<std::uint32_t> limits;
  std::string limits_text;
  std::uint32_t limit_step_mw = 25000;
  std::uint64_t settle_steps = 2;   // left out after each change
  std::uint64_t profile_steps = 8;  // measured at each limit
  bool per_gpu = false;             // each GPU its own limit
  bool dry_run = false;             // say what would be tried; change nothing, run nothing
};

// Runs settings.command, tuning the GPUs' power limit; returns the command's exit status.
// Without permission to set limits, or on GPUs whose limit cannot be changed, says why and runs
// the command untuned (as `wrap`).  Throws usage_error (--limits outside a GPU's range) or
// fatal_error (another joules holds a GPU) before the command starts.
int tune(const measure_settings& settings, const wrap_settings& steps, const wrap_output& output,
         const tune_settings& tune);

// --dry-run: the GPUs, their limits, the plan, the permission and the journal, on stdout.
int tune_dry_run(const measure_settings& settings, const tune_settings& tune);

}  // namespace joules::session
