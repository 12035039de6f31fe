#pragma once
// FAKE_NVML_STATE_FILE (README "The driver's state across processes", written by
// tests/fake_common/limit_state.hpp): the power limit of every
// device, shared by every process that loads the fake, as a real driver keeps a limit after the
// process that set it has gone.  It is also how a test workload feels the limit: each line names
// a device, its limit and the time per step its workload takes at that limit, which a trainer
// (examples/toy_trainer.c --slowdown-file) stretches its steps by.
//
//   # fake state: uuid limit_mw step_time_factor
//   GPU-00000000-0000-4000-8000-000000000000 450000 1.083333
//
// The file is replaced whole (a temporary file renamed over it), so a reader never sees half of
// one.  Thread-safety: save_state serialises writers of this process; processes that set limits
// at once each write what they know, the last rename wins.

#include "scenario.hpp"

namespace fake_nvml {

// Gives the devices of `s` the limits the file holds (a device it does not name keeps its own),
// effective from scenario time `t`; without a file, writes one from `s`.  Nothing without
// FAKE_NVML_STATE_FILE.
void load_state(scenario& s, double t);

// Rewrites the file from the devices' limits now (after a limit changed).
void save_state(const scenario& s);

}  // namespace fake_nvml
