#pragma once
// The sustained power limit (PL1) of an Intel GPU through Sysman, for tune and sweep: read and set
// with zesPowerGetLimitsExt / zesPowerSetLimitsExt, else the older zesPowerGetLimits /
// zesPowerSetLimits where the driver lacks them, on the GPU's card (else package) power domain
// that software may control (docs/level-zero-notes.md §7).  Milliwatts, Level Zero's unit.
//
// Not thread-safe: called by the sampler thread only, as every call of the backend.

#include <cstdint>

#include "backends/backend.hpp"
#include "backends/levelzero/ze_library.hpp"

namespace joules::ze {

// The domain whose limit is the GPU's, with the range zesPowerGetProperties gave (mW; -1 or 0:
// not known).
struct limit_domain {
  zes_pwr_handle_t handle = nullptr;
  std::int32_t min_mw = -1;
  std::int32_t max_mw = -1;
  std::int32_t default_mw = -1;
};

power_limit_reading read_sustained_limit(const library& lib, const limit_domain& d);
control_result set_sustained_limit(const library& lib, const limit_domain& d,
                                   std::uint32_t limit_mw);

}  // namespace joules::ze
