#include "tuning/goal.hpp"

#include <fmt/format.h>

namespace joules::tuning {

std::string_view to_string(goal_kind g) {
  switch (g) {
    case goal_kind::energy:
      return "energy";
    case goal_kind::edp:
      return "edp";
    case goal_kind::time_within:
      return "time-within";
    case goal_kind::cost:
      return "cost";
  }
  return "energy";
}

std::optional<goal_kind> goal_from(std::string_view name) {
  for (const goal_kind g :
       {goal_kind::energy, goal_kind::edp, goal_kind::time_within, goal_kind::cost}) {
    if (to_string(g) == name) return g;
  }
  return std::nullopt;
}

std::string goal::describe() const {
  switch (kind) {
    case goal_kind::energy:
      return "the least energy per step";
    case goal_kind::edp:
      return "the least energy x time per step";
    case goal_kind::time_within:
      return fmt::format("the least energy per step within {:g} % of the baseline's time per step",
                         max_slowdown * 100.0);
    case goal_kind::cost:
      return fmt::format("the least cost (eta {:g})", eta);
  }
  return {};
}

double score(const goal& g, const point& p) {
  switch (g.kind) {
    case goal_kind::energy:
    case goal_kind::time_within:
      return p.energy_per_step_j;
    case goal_kind::edp:
      return p.energy_per_step_j * p.seconds_per_step;
    case goal_kind::cost:
      return g.eta * p.energy_per_step_j + (1.0 - g.eta) * g.full_power_w * p.seconds_per_step;
  }
  return p.energy_per_step_j;
}

bool feasible(const goal& g, const point& p, const point& baseline) {
  if (g.kind != goal_kind::time_within) return true;
  return p.seconds_per_step <= (1.0 + g.max_slowdown) * baseline.seconds_per_step;
}

const point& choose(const goal& g, const std::vector<point>& points, const point& baseline) {
  const point* best = &baseline;
  for (const point& p : points) {
    if (!feasible(g, p, baseline)) continue;
    const double a = score(g, p);
    const double b = score(g, *best);
    if (a < b || (a == b && p.limit_mw > best->limit_mw)) best = &p;
  }
  return *best;
}

}  // namespace joules::tuning
