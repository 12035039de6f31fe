#pragma once
// The order in which `tune` tries power limits (docs/tuning.md, "The method").
//
//   1. the baseline: the limit in force before tune, which every saving is measured against;
//   2. a coarse pass down the grid, every `stride`-th limit from the highest (and the lowest);
//      for time-within it stops at the first limit too slow, since time per step never falls
//      as the limit does (energy per step has no such law: the other goals see the whole pass);
//   3. a pattern search on the grid around the best point so far: the limits `h` grid steps
//      either side, then around the best again with h halved, down to one grid step — so the
//      choice is within one grid step of the best of the grid where the goal's measure is
//      unimodal around the best coarse limit, in log2(stride) rounds of two.  On a plateau
//      (limits above what the GPU draws change nothing) it searches from the plateau's lowest
//      limit, where the limit begins to matter.
//
// With a 25 W grid from 700 to 200 W and a stride of 4: at most 1 + 6 + 4 limits, against 21
// for trying every one.  Pure logic; not thread-safe.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "tuning/goal.hpp"

namespace joules::tuning {

class limit_search {
 public:
  // How far apart two measurements of one limit may be (a fraction of the score) for the search
  // to take them as equal: energy and time per step over a few steps.
  static constexpr double kNoise = 0.02;

  // `grid`: the limits that may be tried, highest first, holding `baseline_mw`.
  limit_search(std::vector<std::uint32_t> grid, std::uint32_t baseline_mw, goal g,
               std::size_t stride = 4);

  // The next limit to measure, given every point measured so far; nullopt: the search is done.
  std::optional<std::uint32_t> next(const std::vector<point>& measured);

  // The goal's choice among `measured` (which holds the baseline).
  const point& best(const std::vector<point>& measured) const;

  const std::vector<std::uint32_t>& grid() const { return grid_; }
  // The coarse pass's limits, highest first.
  std::vector<std::uint32_t> coarse() const;

 private:
  enum class phase { coarse, fine };
  // Whether the coarse pass may stop before the bottom of the grid.
  bool stop_descending(const std::vector<point>& measured) const;
  // Where the pattern search goes on from (an index into the grid).
  std::size_t centre(const std::vector<point>& measured) const;
  std::size_t index_of(std::uint32_t mw) const;

  std::vector<std::uint32_t> grid_;
  std::uint32_t baseline_mw_;
  goal goal_;
  std::size_t stride_;
  phase phase_ = phase::coarse;
  std::size_t step_ = 0;    // h, in grid steps
  std::size_t center_ = 0;  // index of the pattern search's centre
};

// The point measured at `mw`, if any.
const point* find_point(const std::vector<point>& measured, std::uint32_t mw);

}  // namespace joules::tuning
