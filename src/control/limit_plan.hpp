#pragma once
// Which power limits to try: --limits as the user writes it, the limits the GPUs accept, and
// the grid tune searches.  Limits are milliwatts (NVML's unit), so that a journal, a request and
// a reading compare exactly.
//
// Pure logic.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace joules::control {

// The range a GPU accepts, milliwatts.
struct limit_bounds {
  std::uint32_t min_mw = 0;
  std::uint32_t max_mw = 0;
};

// --limits: "HI:LO:STEP" (from HI down to LO in STEP watts, LO included even when STEP does not
// divide the span) or "A,B,C" (those limits), in watts, whole or with decimals.  Returns the
// limits highest first, each once.  Throws usage_error naming `option` and the value.
std::vector<std::uint32_t> parse_limits(std::string_view option, std::string_view text);

// The first limit outside `b`, as one line naming `option` and what the GPU accepts ("--limits
// '800:200:25': 800 W is above GPU 0's maximum of 700 W (it accepts 200-700 W)"); nullopt when
// every limit is inside.
std::optional<std::string> outside_bounds(std::string_view option, std::string_view text,
                                          const std::vector<std::uint32_t>& limits,
                                          const limit_bounds& b, unsigned gpu_index);

// The grid tune searches: from b.max_mw down in steps of `step_mw`, b.min_mw included, and
// `also` (the limit in force) added when it is inside and not on the grid.  Highest first.
std::vector<std::uint32_t> limit_grid(const limit_bounds& b, std::uint32_t step_mw,
                                      std::optional<std::uint32_t> also = std::nullopt);

// "250 W", "262.5 W": a limit in words.
std::string watts_text(std::uint32_t mw);

}  // namespace joules::control
