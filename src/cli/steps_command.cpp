// `joules steps`: which lines of a training log are steps, phases and metrics, and why.

#include "cli/commands.hpp"
#include "session/steps.hpp"

namespace joules::cli {
namespace {

constexpr options::command_text kStepsText{
    "steps", "show which lines of a training log are steps, phases and metrics",
    "[OPTIONS] [FILE|-]",
    "Reads a training log (FILE, or standard input when FILE is - or absent) and prints, for "
    "each line, what `joules wrap` would make of it: the line number, the step found (or -), the "
    "total, the steps since the previous step line (0: the same step again), the event (step, "
    "repeat, restart, eval begins, checkpoint ends, metrics, not-a-step, -), the format that "
    "recognised it (a built-in rule, custom, or learnt: a counter the general mechanism learnt "
    "from the log), and the metrics parsed, in SI units. --explain adds why, line by line. A "
    "summary line ends the output. Formats and rules: docs/step-formats.md.",
    "joules steps train.log\n"
    "python train.py 2>&1 | tee train.log | joules steps --only-steps\n"
    "joules steps --explain train.log | less\n"
    "joules steps --step-regex '^it (\\d+)/(?<total>\\d+)' --json train.log"};

class steps_command final : public options::command {
 public:
  const options::command_text& text() const override { return kStepsText; }
  void declare(options::option_table& t) override {
    t.positional(options::positional_kind::files);
    t.repeated("step-regex", "RE",
               "An extra step format: a PCRE2 regular expression searched in each line; its first "
               "capture group is the step number, an optional group named total the total, e.g. "
               "'^it (\\d+) of (?<total>\\d+)'. Tried before the built-in formats.",
               [this](const std::string& v) { s_.step_regexes.push_back(v); });
    t.repeated("rule-off", "NAME",
               "Read the log without the built-in format rule NAME (a format name, e.g. keras, "
               "hf_trainer): what the general mechanism makes of a trainer on its own.",
               [this](const std::string& v) { s_.rules_off.push_back(v); });
    t.flag("json", 0, "Print one JSON object per line (and a summary object) instead of text.",
           s_.json);
    t.flag("only-steps", 0, "Print only the lines that are steps or start or end a phase.",
           s_.only_steps);
    t.flag("explain", 0,
           "Say for each line why it is or is not a step: the rule or the learnt counter that read "
           "it, from which field of which template (the line's text with numbers as #), or why "
           "not. With --json, a \"why\" field.",
           s_.explain);
  }
  int run(std::vector<std::string> positional) override {
    return session::show_steps(s_, positional);
  }

 private:
  session::steps_settings s_;
};

}  // namespace

std::unique_ptr<options::command> make_steps_command() {
  return std::make_unique<steps_command>();
}

}  // namespace joules::cli
