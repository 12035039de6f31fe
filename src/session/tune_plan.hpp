#pragma once
// What tune and sweep learn before the command starts: the GPUs whose limits they would change,
// each one's limit now and its range (read on the sampler's thread), the range all of them
// accept, the limits to try, and why the GPUs cannot be tuned when they cannot.
//
// Not thread-safe: the main thread's, before sampling starts.

#include <cstdint>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "control/gpu_claim.hpp"
#include "control/limit_plan.hpp"
#include "sampler/sampler.hpp"

namespace joules::session {

struct planned_gpu {
  std::size_t device = 0;    // index into the sampler's devices
  std::size_t position = 0;  // its place among the measured devices (a window's devices)
  device_info info;
  power_limit_reading limits;
  std::string backend;  // the backend that owns it ("nvml", "amdsmi", ...) and its library
  std::string library;
};

struct limit_plan {
  std::vector<planned_gpu> gpus;
  std::string unavailable;            // why the limits cannot be changed; "" when they can
  control::limit_bounds bounds;       // the range every GPU accepts
  std::uint32_t baseline_mw = 0;      // the limit in force (the highest of the GPUs')
  std::vector<std::uint32_t> limits;  // to try, highest first (the baseline among them)

  // The GPUs as the claim takes them.
  std::vector<control::claimed_gpu> claimed() const;
  // "GPU 0-7" / "GPU 0, 2": which GPUs, for people.
  std::string gpu_list() const;
};

// Reads the limits of the GPUs among `measured` (indices into the sampler's devices, in record
// order) and plans: `limits` (from --limits, highest first; `option`/`text` name it in errors)
// or, when empty, a grid of `step_mw` over the common range.  Throws usage_error when a limit
// asked for is outside a GPU's range.
limit_plan plan_limits(sampler& s, const std::vector<std::size_t>& measured,
                       const std::vector<std::uint32_t>& limits, std::string_view option,
                       std::string_view text, std::uint32_t step_mw);

}  // namespace joules::session
