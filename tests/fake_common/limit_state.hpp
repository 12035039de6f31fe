#pragma once
// Power limits as a driver keeps them, shared by the fakes (tests/fake_nvml/README.md, "The
// driver's state across processes"): a state file named by <PREFIX>_STATE_FILE holds the limit of
// every device of the fake, so that a limit set by one process is what the next one reads, and
// the time per step the device's workload takes at that limit, which a test trainer
// (examples/toy_trainer.c --slowdown-file) stretches its steps by.
//
//   # fake state: uuid limit_mw step_time_factor
//   GPU-00000000-0000-4000-8000-000000000000 450000 1.083333
//
// The file is replaced whole (a temporary file renamed over it), so a reader never sees half of
// one.  Thread-safety: save_limits serialises writers of this process; processes that set limits
// at once each write what they know, the last rename wins.

#include <string>
#include <utility>
#include <vector>

#include "json_fields.hpp"
#include "power_model.hpp"

namespace fake_gpu {

// The workload's time per step at each power limit, relative to an unconstrained step
// ({limit_w, factor}, limit ascending).  Empty: 1 at every limit.
struct step_curve {
  std::vector<std::pair<double, double>> points;
  // At `limit_w`: linear between the points, constant outside them.
  double at(double limit_w) const;
};

// A device's "step_time_factor": [[limit_w, factor], ...], limits strictly ascending, factors
// positive; empty when absent.
step_curve parse_step_curve(json_fields& f);

// One device as the state file knows it.
struct limited_device {
  std::string uuid;
  power_model* power = nullptr;  // owns the limit in force
  unsigned int min_mw = 0;       // a limit outside the range in the file is ignored
  unsigned int max_mw = 0;
  const step_curve* curve = nullptr;
};

// Gives `devices` the limits <prefix>_STATE_FILE holds (a device it does not name keeps its own),
// effective from scenario time `t`; without a file, writes one from `devices`.  Nothing without
// <prefix>_STATE_FILE.
void load_limits(const std::string& prefix, const std::vector<limited_device>& devices, double t);

// Rewrites <prefix>_STATE_FILE from the devices' limits now (after a limit changed).
void save_limits(const std::string& prefix, const std::vector<limited_device>& devices);

}  // namespace fake_gpu
