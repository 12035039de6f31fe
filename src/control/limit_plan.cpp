#include "control/limit_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "util/error.hpp"
#include "util/strings.hpp"

namespace joules::control {
namespace {

// Watts from 1 to 100 kW with at most milliwatt precision, as milliwatts.
std::optional<std::uint32_t> milliwatts_of(std::string_view text) {
  const auto w = parse_double(trim(text));
  if (!w || !std::isfinite(*w) || *w < 1.0 || *w > 100000.0) return std::nullopt;
  return static_cast<std::uint32_t>(std::llround(*w * 1000.0));
}

}  // namespace

std::string watts_text(std::uint32_t mw) {
  if (mw % 1000 == 0) return fmt::format("{} W", mw / 1000);
  return fmt::format("{:g} W", mw / 1000.0);
}

std::vector<std::uint32_t> parse_limits(std::string_view option, std::string_view text) {
  const auto bad = [&](std::string_view why) {
    return usage_error(fmt::format(
        "{} '{}': {}; expected HI:LO:STEP (watts, e.g. 400:200:25) or a list such as 400,300,250",
        option, text, why));
  };
  std::vector<std::uint32_t> out;
  if (text.find(':') != std::string_view::npos) {
    const auto parts = split(text, ':');
    if (parts.size() != 3) throw bad("three numbers are needed");
    const auto hi = milliwatts_of(parts[0]);
    const auto lo = milliwatts_of(parts[1]);
    const auto step = milliwatts_of(parts[2]);
    if (!hi || !lo || !step) throw bad("each is a number of watts from 1 to 100000");
    if (*hi < *lo) throw bad("HI is below LO");
    if (*step == 0) throw bad("STEP is 0");
    if ((*hi - *lo) / *step > 1000) throw bad("more than 1000 limits");
    for (std::uint32_t mw = *hi; mw > *lo; mw -= std::min(*step, mw - *lo))
      out.push_back(mw);
    out.push_back(*lo);
  } else {
    for (const auto& part : split(text, ',')) {
      const auto mw = milliwatts_of(part);
      if (!mw) throw bad(fmt::format("'{}' is not a number of watts from 1 to 100000", part));
      out.push_back(*mw);
    }
    if (out.size() > 1000) throw bad("more than 1000 limits");
  }
  std::sort(out.begin(), out.end(), std::greater<>());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::optional<std::string> outside_bounds(std::string_view option, std::string_view text,
                                          const std::vector<std::uint32_t>& limits,
                                          const limit_bounds& b, unsigned gpu_index) {
  for (const std::uint32_t mw : limits) {
    if (mw >= b.min_mw && mw <= b.max_mw) continue;
    return fmt::format("{} '{}': {} is {} GPU {}'s {} of {} (it accepts {}-{})", option, text,
                       watts_text(mw), mw > b.max_mw ? "above" : "below", gpu_index,
                       mw > b.max_mw ? "maximum" : "minimum",
                       watts_text(mw > b.max_mw ? b.max_mw : b.min_mw), watts_text(b.min_mw),
                       watts_text(b.max_mw));
  }
  return std::nullopt;
}

std::vector<std::uint32_t> limit_grid(const limit_bounds& b, std::uint32_t step_mw,
                                      std::optional<std::uint32_t> also) {
  std::vector<std::uint32_t> out;
  if (b.max_mw <= b.min_mw || step_mw == 0) return {b.max_mw};
  for (std::uint32_t mw = b.max_mw; mw > b.min_mw; mw -= std::min(step_mw, mw - b.min_mw))
    out.push_back(mw);
  out.push_back(b.min_mw);
  if (also && *also >= b.min_mw && *also <= b.max_mw &&
      std::find(out.begin(), out.end(), *also) == out.end()) {
    out.push_back(*also);
    std::sort(out.begin(), out.end(), std::greater<>());
  }
  return out;
}

}  // namespace joules::control
