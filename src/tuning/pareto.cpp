#include "tuning/pareto.hpp"

#include <algorithm>
#include <cmath>

namespace joules::tuning {

std::vector<std::size_t> pareto_front(const std::vector<point>& points) {
  std::vector<std::size_t> order(points.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  // Fastest first; among equal times the least energy, then the higher limit.
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const point& p = points[a];
    const point& q = points[b];
    if (p.seconds_per_step != q.seconds_per_step) return p.seconds_per_step < q.seconds_per_step;
    if (p.energy_per_step_j != q.energy_per_step_j)
      return p.energy_per_step_j < q.energy_per_step_j;
    return p.limit_mw > q.limit_mw;
  });
  std::vector<std::size_t> front;
  for (const std::size_t i : order) {
    // Each point slower than the last on the front must use less energy to be on it.
    if (front.empty() || points[i].energy_per_step_j < points[front.back()].energy_per_step_j) {
      front.push_back(i);
    }
  }
  return front;
}

std::optional<std::size_t> knee(const std::vector<point>& points,
                                const std::vector<std::size_t>& front) {
  if (front.size() < 3) return std::nullopt;
  const point& first = points[front.front()];
  const point& last = points[front.back()];
  const double t_span = last.seconds_per_step - first.seconds_per_step;
  const double e_span = first.energy_per_step_j - last.energy_per_step_j;
  if (!(t_span > 0.0) || !(e_span > 0.0)) return std::nullopt;
  // Scaled, the front runs from (0, 1) to (1, 0); the line between them is x + y = 1, and a
  // point's distance below it is proportional to 1 - x - y.
  std::optional<std::size_t> best;
  double best_gap = 1e-9;
  for (std::size_t k = 1; k + 1 < front.size(); ++k) {
    const point& p = points[front[k]];
    const double x = (p.seconds_per_step - first.seconds_per_step) / t_span;
    const double y = (p.energy_per_step_j - last.energy_per_step_j) / e_span;
    const double gap = 1.0 - x - y;
    if (gap > best_gap) {
      best_gap = gap;
      best = front[k];
    }
  }
  return best;
}

}  // namespace joules::tuning
