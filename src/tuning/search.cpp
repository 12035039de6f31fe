#include "tuning/search.hpp"

#include <algorithm>

namespace joules::tuning {

const point* find_point(const std::vector<point>& measured, std::uint32_t mw) {
  for (const point& p : measured) {
    if (p.limit_mw == mw) return &p;
  }
  return nullptr;
}

limit_search::limit_search(std::vector<std::uint32_t> grid, std::uint32_t baseline_mw, goal g,
                           std::size_t stride)
    : grid_(std::move(grid)),
      baseline_mw_(baseline_mw),
      goal_(g),
      stride_(std::max<std::size_t>(stride, 1)) {
  if (std::find(grid_.begin(), grid_.end(), baseline_mw_) == grid_.end()) {
    grid_.push_back(baseline_mw_);
    std::sort(grid_.begin(), grid_.end(), std::greater<>());
  }
}

std::size_t limit_search::index_of(std::uint32_t mw) const {
  const auto it = std::find(grid_.begin(), grid_.end(), mw);
  return static_cast<std::size_t>(it - grid_.begin());
}

std::vector<std::uint32_t> limit_search::coarse() const {
  std::vector<std::uint32_t> out;
  for (std::size_t i = 0; i < grid_.size(); i += stride_)
    out.push_back(grid_[i]);
  if (out.back() != grid_.back()) out.push_back(grid_.back());
  return out;
}

const point& limit_search::best(const std::vector<point>& measured) const {
  const point* base = find_point(measured, baseline_mw_);
  return choose(goal_, measured, base != nullptr ? *base : measured.front());
}

bool limit_search::stop_descending(const std::vector<point>& measured) const {
  // Time per step never falls as the limit does: below a limit too slow for time-within, every
  // limit is too slow.  Energy per step has no such law (it may fall again at the lowest
  // limits), so the other goals see the whole coarse pass.
  if (goal_.kind != goal_kind::time_within) return false;
  const point* base = find_point(measured, baseline_mw_);
  if (base == nullptr) return false;
  const point* lowest = nullptr;
  for (const std::uint32_t mw : coarse()) {
    if (const point* p = find_point(measured, mw)) lowest = p;
  }
  return lowest != nullptr && !feasible(goal_, *lowest, *base);
}

std::size_t limit_search::centre(const std::vector<point>& measured) const {
  // The lowest limit that scores as well as the best but for noise: on a plateau (limits above
  // what the GPU draws change nothing) the search goes on from the plateau's edge, where the
  // limit starts to matter, not from wherever noise put the best.
  const point* base = find_point(measured, baseline_mw_);
  const point& best_point = best(measured);
  const double bar = score(goal_, best_point) * (1.0 + kNoise);
  std::uint32_t lowest = best_point.limit_mw;
  for (const point& p : measured) {
    if (base != nullptr && !feasible(goal_, p, *base)) continue;
    if (score(goal_, p) <= bar) lowest = std::min(lowest, p.limit_mw);
  }
  return index_of(lowest);
}

std::optional<std::uint32_t> limit_search::next(const std::vector<point>& measured) {
  if (find_point(measured, baseline_mw_) == nullptr) return baseline_mw_;
  if (phase_ == phase::coarse) {
    if (!stop_descending(measured)) {
      for (const std::uint32_t mw : coarse()) {
        if (find_point(measured, mw) == nullptr) return mw;
      }
    }
    phase_ = phase::fine;
    step_ = stride_ / 2;
    center_ = centre(measured);
  }
  while (step_ >= 1) {
    for (const bool down : {true, false}) {
      if (!down && center_ < step_) continue;
      const std::size_t i = down ? center_ + step_ : center_ - step_;
      if (i >= grid_.size()) continue;
      if (find_point(measured, grid_[i]) == nullptr) return grid_[i];
    }
    center_ = centre(measured);
    step_ /= 2;
  }
  return std::nullopt;
}

}  // namespace joules::tuning
