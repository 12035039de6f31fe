#pragma once
// The trade-off a sweep shows: the Pareto front of (time per step, energy per step) — the limits
// no other limit beats on both — and its knee, the limit past which saving more energy costs
// disproportionately more time.
//
// The knee is the front's point farthest from the straight line between the front's two ends,
// with both axes scaled to 0..1 over the front (the "Kneedle" construction of Satopää et al.,
// "Finding a 'Kneedle' in a Haystack", ICDCS Workshops 2011,
// https://doi.org/10.1109/ICDCSW.2011.20).  A front of one or two points has no knee.
//
// Pure logic.

#include <cstddef>
#include <optional>
#include <vector>

#include "tuning/goal.hpp"

namespace joules::tuning {

// Indices into `points` of the Pareto front, fastest first.  Lower time and lower energy are
// better; a point equal to another on both is kept once (the higher limit).
std::vector<std::size_t> pareto_front(const std::vector<point>& points);

// The index into `points` of the front's knee; nullopt for a front of fewer than three points
// or one on a straight line.
std::optional<std::size_t> knee(const std::vector<point>& points,
                                const std::vector<std::size_t>& front);

}  // namespace joules::tuning
