#pragma once
// A device's `power` object of a scenario (the fakes' READMEs, "Power functions") and the
// instant its energy counter shows: what every fake reads the same way.

#include <memory>

#include "json_fields.hpp"
#include "power_model.hpp"

namespace fake_gpu {

// The device's `power` ({"type": "constant", "watts": 100} when absent) with `clamp_to_limit`,
// capped at `limit_mw` when clamped.
std::unique_ptr<power_model> parse_power(json_fields& dev, unsigned int limit_mw);

// The instant whose energy a counter updated every `update_s` (0: continuously) from `phase_s`
// on shows at t: the last update at or before t, never before scenario time 0 (a counter makes
// its first step at its first update after time 0).
double counter_instant(double t, double update_s, double phase_s);

}  // namespace fake_gpu
