// tune's search, goals and per-limit measurements, and sweep's front and knee (src/tuning),
// against curves whose every point is known.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "tuning/goal.hpp"
#include "tuning/pareto.hpp"
#include "tuning/profile.hpp"
#include "tuning/search.hpp"
#include "tuning/sweep_plot.hpp"

namespace joules::tuning {
namespace {

// A workload like tests/cli/tune_curves.py's: it draws `power_w` uncapped, and its step takes
// 1 + a * ((knee - L) / 100)^p times as long below the knee.
struct curve {
  double power_w;
  double knee_w;
  double a;
  double p;
  point at(std::uint32_t mw, double noise = 0.0) const {
    const double l = mw / 1000.0;
    const double f = 1.0 + a * std::pow(std::max(0.0, (knee_w - l) / 100.0), p);
    return {mw, std::min(power_w, l) * f * (1.0 + noise), f * (1.0 - noise / 2), 8};
  }
};

std::vector<std::uint32_t> grid() {
  std::vector<std::uint32_t> g;
  for (std::uint32_t mw = 700000; mw >= 200000; mw -= 25000)
    g.push_back(mw);
  return g;
}

goal goal_of(goal_kind k) {
  goal g;
  g.kind = k;
  g.full_power_w = 700.0;
  return g;
}

// Runs the search to its end, measuring each limit it asks for.
std::vector<point> search_all(limit_search& s, const curve& c, std::mt19937* noise = nullptr) {
  std::vector<point> measured;
  std::uniform_real_distribution<double> d(-0.01, 0.01);
  while (const auto next = s.next(measured))
    measured.push_back(c.at(*next, noise != nullptr ? d(*noise) : 0.0));
  return measured;
}

TEST(Search, EveryGoalEndsWithinOneGridStepOfTheGridsBestOnManyCurves) {
  const auto g = grid();
  int cases = 0;
  for (const double power : {450.0, 550.0, 650.0}) {
    for (const double knee : {300.0, 350.0, 400.0, 450.0, 500.0, 550.0}) {
      for (const double a : {0.1, 0.2, 0.4, 0.8}) {
        for (const double p : {1.5, 2.0, 3.0}) {
          const curve c{power, knee, a, p};
          for (const goal_kind k :
               {goal_kind::energy, goal_kind::edp, goal_kind::time_within, goal_kind::cost}) {
            const goal gl = goal_of(k);
            std::vector<point> all;
            for (const auto mw : g)
              all.push_back(c.at(mw));
            const point truth = choose(gl, all, all.front());
            limit_search s(g, 700000, gl);
            const auto measured = search_all(s, c);
            const point got = s.best(measured);
            // Within one step, or as good (a flat optimum): the goal's own measure decides.
            const bool near = std::abs(static_cast<int>(got.limit_mw) -
                                       static_cast<int>(truth.limit_mw)) <= 25000;
            EXPECT_TRUE(near || score(gl, got) <= score(gl, truth) * 1.0001)
                << to_string(k) << " power " << power << " knee " << knee << " a " << a << " p "
                << p << ": " << got.limit_mw << " vs " << truth.limit_mw;
            EXPECT_LE(measured.size(), 12U);
            ++cases;
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 3 * 6 * 4 * 3 * 4);
}

TEST(Search, OnePercentNoiseMovesTheChoiceAtMostOneStepFromTheTruth) {
  std::mt19937 rng(7);
  const curve c{550.0, 350.0, 0.4, 2.0};  // tests/cli/tune_curves.py's knee350
  for (int run = 0; run < 50; ++run) {
    for (const goal_kind k : {goal_kind::energy, goal_kind::edp, goal_kind::cost}) {
      const goal gl = goal_of(k);
      limit_search s(grid(), 700000, gl);
      std::vector<point> all;
      for (const auto mw : grid())
        all.push_back(c.at(mw));
      const point truth = choose(gl, all, all.front());
      const point got = s.best(search_all(s, c, &rng));
      EXPECT_LE(std::abs(static_cast<int>(got.limit_mw) - static_cast<int>(truth.limit_mw)), 25000)
          << to_string(k) << " run " << run;
    }
  }
}

TEST(Search, TheOrderIsBaselineCoarseDownThenAroundTheBest) {
  const curve c{550.0, 350.0, 0.4, 2.0};
  limit_search s(grid(), 650000, goal_of(goal_kind::energy));
  EXPECT_EQ(s.coarse(),
            (std::vector<std::uint32_t>{700000, 600000, 500000, 400000, 300000, 200000}));
  std::vector<point> measured;
  std::vector<std::uint32_t> order;
  while (const auto next = s.next(measured)) {
    order.push_back(*next);
    measured.push_back(c.at(*next));
  }
  // The limit in force first (650 W is added to the grid), then 700 down to 200, then the
  // pattern search around 300 W: 250 and 350, then 275 and 325.
  EXPECT_EQ(order, (std::vector<std::uint32_t>{650000, 700000, 600000, 500000, 400000, 300000,
                                               200000, 250000, 350000, 275000, 325000}));
}

TEST(Search, TimeWithinStopsAtTheFirstCoarseLimitThatIsTooSlow) {
  const curve c{550.0, 500.0, 0.2, 3.0};
  limit_search s(grid(), 700000, goal_of(goal_kind::time_within));
  std::vector<point> measured;
  while (const auto next = s.next(measured))
    measured.push_back(c.at(*next));
  // 400 W is 20 % slower: nothing below it is tried.
  for (const auto& p : measured)
    EXPECT_GE(p.limit_mw, 350000U) << p.limit_mw;
  EXPECT_EQ(s.best(measured).limit_mw, 450000U);
}

TEST(Goal, EachGoalsScoreAndConstraint) {
  const point base{700000, 100.0, 1.0, 8};
  const point slow{400000, 70.0, 1.1, 8};
  goal g = goal_of(goal_kind::time_within);
  EXPECT_FALSE(feasible(g, slow, base));
  g.max_slowdown = 0.1;
  EXPECT_TRUE(feasible(g, slow, base));
  EXPECT_DOUBLE_EQ(score(goal_of(goal_kind::edp), slow), 77.0);
  goal cost = goal_of(goal_kind::cost);
  cost.eta = 0.25;
  EXPECT_DOUBLE_EQ(score(cost, slow), 0.25 * 70.0 + 0.75 * 700.0 * 1.1);
  const std::vector<point> pts{base, slow};
  EXPECT_EQ(choose(goal_of(goal_kind::energy), pts, base).limit_mw, 400000U);
  EXPECT_EQ(choose(goal_of(goal_kind::time_within), pts, base).limit_mw, 700000U);
  EXPECT_EQ(goal_from("time-within"), goal_kind::time_within);
  EXPECT_FALSE(goal_from("speed"));
}

TEST(Profile, WindowsLandInTheStageTheyRanInAndSettlingStepsAreLeftOut) {
  limit_profile p(2);
  p.begin(700000, 0, 3);  // the baseline from the start, 3 steps left out
  for (std::uint64_t w = 1; w <= 6; ++w)
    p.add(w, 1, 0.1, {10.0, 12.0});
  p.begin(500000, 7, 2);                   // asked at the step line that closed window 6
  p.add(7, 1, 0.2, {50.0, 50.0});          // settling
  p.add(8, 2, 0.2, {8.0, 9.0});            // settling too: it started inside the first two steps
  p.add(9, 1, 0.12, {std::nullopt, 8.0});  // a GPU without energy: left out
  p.add(10, 1, 0.12, {8.0, 9.0});
  const auto pts = p.points();
  ASSERT_EQ(pts.size(), 2U);
  EXPECT_EQ(pts[0].limit_mw, 700000U);
  EXPECT_EQ(pts[0].steps, 3U);
  EXPECT_DOUBLE_EQ(pts[0].energy_per_step_j, 22.0);
  EXPECT_DOUBLE_EQ(pts[0].seconds_per_step, 0.1);
  EXPECT_EQ(pts[1].steps, 1U);
  EXPECT_DOUBLE_EQ(pts[1].energy_per_step_j, 17.0);
  EXPECT_EQ(p.points_of_gpu(1)[1].energy_per_step_j, 9.0);
  EXPECT_EQ(p.points(1).size(), 1U);  // the first stage alone
  EXPECT_EQ(p.stages()[1].steps_seen, 5U);
}

TEST(Pareto, TheFrontAndItsKnee) {
  // (limit, J, s): 650 is beaten by 600 (as fast, less energy); 300 by 350 (faster, less).
  const std::vector<point> pts{{700000, 30.0, 1.00, 1}, {650000, 31.0, 1.00, 1},
                               {600000, 29.5, 1.00, 1}, {500000, 22.0, 1.05, 1},
                               {400000, 19.0, 1.20, 1}, {350000, 18.0, 1.60, 1},
                               {300000, 18.5, 2.00, 1}};
  const auto front = pareto_front(pts);
  std::vector<std::uint32_t> limits;
  for (const auto i : front)
    limits.push_back(pts[i].limit_mw);
  EXPECT_EQ(limits, (std::vector<std::uint32_t>{600000, 500000, 400000, 350000}));
  const auto k = knee(pts, front);
  ASSERT_TRUE(k);
  EXPECT_EQ(pts[*k].limit_mw, 400000U);
  EXPECT_FALSE(knee(pts, {front[0], front[1]}));  // two points: no knee
  const std::string svg = sweep_svg(pts, front, k, "8x <GPU> & co");
  EXPECT_NE(svg.find("8x &lt;GPU&gt; &amp; co"), std::string::npos);
  EXPECT_NE(svg.find(">knee</text>"), std::string::npos);
  EXPECT_EQ(svg.find("<GPU>"), std::string::npos);
}

}  // namespace
}  // namespace joules::tuning
