#pragma once
// `joules steps`: a training log read line by line as `joules wrap` would read it, printed with
// what each line is (a step and which, a phase, metrics, nothing) and, with `explain`, why.

#include <string>
#include <vector>

namespace joules::session {

struct steps_settings {
  std::vector<std::string> step_regexes;  // --step-regex
  std::vector<std::string> rules_off;     // --rule-off: built-in rules not to use
  bool json = false;
  bool only_steps = false;
  bool explain = false;
};

// Reads `files` (none or "-": standard input; at most one) and prints on stdout.  Returns 0.
// Throws usage_error for an unreadable file, more than one file, or an unknown rule.
int show_steps(const steps_settings& settings, const std::vector<std::string>& files);

}  // namespace joules::session
