// libFuzzer target for the step-line parser (src/steps): the input is a log, fed line by line to
// the built-in formats and their learnt counters, to a parser with every built-in rule off (the
// general mechanism alone), with --explain's reasons asked for, and to a fixed --step-regex
// format (so that state across lines is exercised); when the input's first line starts with
// "re:", the rest of that line is also tried as a --step-regex of its own (an invalid one must be
// a usage_error, nothing else), and a valid one parses the lines too.  Every answer is checked
// for what wrap relies on; asking why changes no answer.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "fuzz/fuzz_input.hpp"
#include "steps/step_parser.hpp"
#include "util/error.hpp"

namespace {

using joules::steps::line_kind;

void check_line(const joules::steps::parsed_line& p) {
  for (const auto& m : p.metrics)
    JOULES_FUZZ_CHECK(!m.name.empty() && std::isfinite(m.value));
  JOULES_FUZZ_CHECK(p.kind == line_kind::step || p.step_gap == 0);
  if (p.kind == line_kind::phase_begin || p.kind == line_kind::phase_end)
    JOULES_FUZZ_CHECK(!p.phase.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto lines = joules::fuzz::fields(joules::fuzz::as_text(data, size), '\n');
  static joules::steps::step_parser fixed({R"(^it (\d+) of (?<total>\d+))"});
  joules::steps::step_parser builtin;
  joules::steps::step_parser explained;
  joules::steps::parser_options general_only;
  for (std::size_t r = 0; r < joules::steps::kRuleCount; ++r)
    general_only.rules.disable(static_cast<joules::steps::rule>(r));
  joules::steps::step_parser general(general_only);
  std::string why;
  std::unique_ptr<joules::steps::step_parser> custom;
  if (lines.front().starts_with("re:")) {
    try {
      custom = std::make_unique<joules::steps::step_parser>(
          std::vector<std::string>{lines.front().substr(3)});
    } catch (const joules::usage_error&) {
      // An invalid regex is refused with a message: what --step-regex must do.
    }
  }
  for (const auto& line : lines) {
    const auto p = builtin.parse(line);
    check_line(p);
    JOULES_FUZZ_CHECK(explained.parse(line, why) == p);
    JOULES_FUZZ_CHECK(!why.empty() || p.kind == line_kind::none);
    check_line(general.parse(line));
    check_line(fixed.parse(line));
    if (custom) check_line(custom->parse(line));
  }
  return 0;
}
