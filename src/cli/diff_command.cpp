// `joules diff A.jsonl B.jsonl`: two runs side by side, with each change held against the noise
// the records show; --fail-if-worse for CI gates (docs/report.md).

#include "cli/commands.hpp"
#include "session/record_tasks.hpp"

namespace joules::cli {
namespace {

constexpr options::command_text kDiffText{
    "diff", "compare two runs per phase and per GPU, against run-to-run noise",
    "[OPTIONS] A.jsonl B.jsonl",
    "Compares the records of run A (before) with those of run B (after): energy, duration, "
    "energy per step and per token, time per step, mean and peak power, CO2e, the energy of each "
    "phase and of each GPU, with the change in percent and whether it exceeds the noise the "
    "records show (twice the combined standard error: from the spread of the runs when a file "
    "holds several runs of the same job, else from the batch means of each run's steps). "
    "Docs: docs/report.md.\n"
    "--fail-if-worse PCT makes joules exit with status 1 when the gated figure (J/token where "
    "both runs have tokens, else J/step, else energy) got worse by more than PCT percent: a "
    "regression gate for CI. Bad input exits with status 2.",
    "joules diff before.jsonl after.jsonl\n"
    "joules diff --fail-if-worse 5 main.jsonl pr.jsonl\n"
    "joules diff --json a.jsonl b.jsonl | jq '.rows[] | select(.exceeds_noise)'"};

class diff_command final : public options::command {
 public:
  const options::command_text& text() const override { return kDiffText; }
  void declare(options::option_table& t) override {
    t.positional(options::positional_kind::files);
    t.number("fail-if-worse", "PCT",
             "Exit with status 1 when B's gated figure (J/token, else J/step, else energy) is "
             "more than PCT percent above A's.",
             "", 0.0, 1000.0, "a percentage from 0 to 1000",
             [this](double v, const std::string&) { settings_.fail_if_worse_percent = v; });
    t.flag("json", 0, "Print the comparison as one JSON object.", settings_.json);
    t.flag("quiet", 'q', "Print no warnings about lines that could not be read.", settings_.quiet);
  }
  int run(std::vector<std::string> positional) override {
    settings_.files = std::move(positional);
    return session::diff(settings_);
  }

 private:
  session::diff_settings settings_;
};

}  // namespace

std::unique_ptr<options::command> make_diff_command() {
  return std::make_unique<diff_command>();
}

}  // namespace joules::cli
