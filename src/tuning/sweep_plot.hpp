#pragma once
// The picture of a sweep: energy per step against time per step, one dot per power limit
// (labelled with its watts), the Pareto front as a line, its knee ringed.  A standalone SVG
// document, no script, no external resources.
//
// Pure logic.

#include <optional>
#include <string>
#include <vector>

#include "tuning/goal.hpp"

namespace joules::tuning {

// `title` is an outside string (a GPU's name): it is escaped for XML here.
std::string sweep_svg(const std::vector<point>& points, const std::vector<std::size_t>& front,
                      std::optional<std::size_t> knee, const std::string& title);

}  // namespace joules::tuning
