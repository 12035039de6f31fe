#pragma once
// What `tune` optimises, and the choice of a limit from the points it measured.  A point is one
// power limit's energy and time per step, measured over the steps that ran at it.
//
//   energy       the least energy per step
//   edp          the least energy x time per step (energy-delay product)
//   time-within  the least energy per step among the limits whose time per step is at most
//                (1 + max_slowdown) x the baseline's (the limit in force before tune): Zeus'
//                MaxSlowdownConstraint, with the least energy rather than the lowest limit
//   cost         Zeus' cost, eta x energy + (1 - eta) x GPUs x maximum limit x time per step:
//                energy priced against the time of every GPU at full power
//
// docs/tuning.md, "Goals".  Pure logic.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace joules::tuning {

enum class goal_kind { energy, edp, time_within, cost };
std::string_view to_string(goal_kind g);
// "energy", "edp", "time-within", "cost"; nullopt for anything else.
std::optional<goal_kind> goal_from(std::string_view name);

struct goal {
  goal_kind kind = goal_kind::time_within;
  double max_slowdown = 0.05;  // time-within: a fraction (0.05 = 5 %)
  double eta = 0.5;            // cost: the weight of energy, 0..1
  double full_power_w = 0.0;   // cost: the GPUs' maximum limits added up
  // "time within 5 % of 700 W", "energy", ...: the goal in words.
  std::string describe() const;
};

// One power limit as measured.
struct point {
  std::uint32_t limit_mw = 0;
  double energy_per_step_j = 0.0;
  double seconds_per_step = 0.0;
  std::uint64_t steps = 0;  // the steps it was measured over
};

// What the goal minimises for `p` (lower is better).
double score(const goal& g, const point& p);
// Whether `p` meets the goal's constraint against the baseline (time-within; always for the
// others).
bool feasible(const goal& g, const point& p, const point& baseline);
// The point the goal picks: the feasible one with the lowest score (the baseline when no other
// is feasible; it always is).  `points` holds the baseline.  Ties go to the higher limit.
const point& choose(const goal& g, const std::vector<point>& points, const point& baseline);

}  // namespace joules::tuning
