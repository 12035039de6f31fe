#pragma once
// What the step learner's tests (unit/step_learner_test.cpp, unit/step_learner_rounds_test.cpp)
// read of a log: each line's kind, step and gap.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "steps/step_parser.hpp"

namespace joules::steps::learner_testing {

struct seen {
  line_kind kind;
  std::uint64_t step;
  std::uint64_t gap;
};

inline std::vector<seen> parse_all(const std::vector<std::string>& lines,
                                   parser_options options = {}) {
  step_parser p(std::move(options));
  std::vector<seen> out;
  for (const auto& l : lines) {
    const auto r = p.parse(l);
    out.push_back({r.kind, r.step, r.step_gap});
  }
  return out;
}

// The steps (number, gap) of the step lines, in order; -1 steps for lines that are not steps.
inline std::vector<std::pair<long long, std::uint64_t>> steps_of(
    const std::vector<std::string>& lines) {
  std::vector<std::pair<long long, std::uint64_t>> out;
  for (const auto& s : parse_all(lines)) {
    out.emplace_back(s.kind == line_kind::step ? static_cast<long long>(s.step) : -1, s.gap);
  }
  return out;
}

using steps_list = std::vector<std::pair<long long, std::uint64_t>>;

}  // namespace joules::steps::learner_testing
