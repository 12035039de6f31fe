// `joules tune`: the power limit that meets a goal, found during the first steps of a run and
// kept for the rest of it; `--restore` sets back limits a joules left changed.

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/shared_options.hpp"
#include "control/limit_plan.hpp"
#include "session/limit_recovery.hpp"
#include "session/tune.hpp"
#include "tuning/goal.hpp"
#include "util/error.hpp"

namespace joules::cli {
namespace {

constexpr options::command_text kTuneText{
    "tune", "find the power limit that meets a goal during a run, and keep it",
    "[OPTIONS] [--] CMD [ARGS...]",
    "Runs CMD like joules wrap. During its first steps the GPUs' power limit is set to one limit "
    "after another between the GPUs' minimum and maximum: the limit in force first (the "
    "baseline), then every 100 W down from the maximum (for time-within, down to the first "
    "limit too slow), then the 25 W steps around the best. Each limit is measured over "
    "--profile-steps steps after --settle-steps steps, from wrap's step windows: energy and "
    "time per step. The limit "
    "that meets --goal is kept for the rest of the run, and every decision goes to the records "
    "and the summary, with the energy saved against the baseline (docs/tuning.md).\n"
    "One limit for all the job's GPUs (the slowest GPU sets a data-parallel job's pace), or one "
    "per GPU with --per-gpu. NVIDIA GPUs (NVML), AMD GPUs (AMD SMI or ROCm SMI) and Intel GPUs "
    "(Level Zero Sysman) alike.\n"
    "Changing a power limit needs root or CAP_SYS_ADMIN: tune asks the driver before CMD "
    "starts, and without permission (or on GPUs whose limit cannot be changed) says why and "
    "runs CMD untuned. The limits before tune are written to a journal first and set back when "
    "CMD ends, on SIGINT and SIGTERM, and when CMD crashes; after a SIGKILL or a power loss the "
    "next joules to start sets them back. --restore does it on request.",
    "joules tune -- torchrun --standalone --nproc_per_node=8 train_gpt.py\n"
    "joules tune --goal energy --output run.jsonl -- python train.py\n"
    "joules tune --dry-run -- python train.py"};

class tune_command final : public options::command {
 public:
  const options::command_text& text() const override { return kTuneText; }
  void declare(options::option_table& t) override;
  int run(std::vector<std::string> positional) override;

 private:
  measure_options options_;
  wrap_options wrap_;
  session::tune_settings tune_;
  std::string goal_ = "time-within";
  bool restore_ = false;
};

void tune_command::declare(options::option_table& t) {
  t.positional(options::positional_kind::command);
  declare_measure(t, options_, "tune");
  declare_wrap(t, wrap_);
  t.group("Tuning");
  CLI::Option* goal = t.choice(
      "goal", "GOAL",
      "What the limit is chosen for: energy (the least energy per step), edp (the least energy "
      "x time per step), time-within (the least energy per step whose time per step stays "
      "within --max-slowdown of the baseline's) or cost (Zeus' eta x energy + (1 - eta) x the "
      "GPUs' maximum power x time).",
      "time-within", {"energy", "edp", "time-within", "cost"}, goal_);
  CLI::Option* slowdown = t.number(
      "max-slowdown", "PCT", "How much longer a step may take, in percent of the baseline's.", "5",
      0.1, 100, "a percentage from 0.1 to 100, e.g. 5",
      [this](double v, const std::string&) { tune_.goal.max_slowdown = v / 100.0; });
  CLI::Option* eta = t.number("eta", "F", "The weight of energy in the cost goal.", "0.5", 0, 1,
                              "a number from 0 to 1, e.g. 0.5",
                              [this](double v, const std::string&) { tune_.goal.eta = v; });
  t.rule(slowdown, "Only with --goal time-within.", [slowdown, goal] {
    if (slowdown->count() > 0 && goal->count() > 0 && goal->results().back() != "time-within")
      throw usage_error("--max-slowdown applies only with --goal time-within");
  });
  t.rule(eta, "Only with --goal cost.", [eta, goal] {
    if (eta->count() > 0 && (goal->count() == 0 || goal->results().back() != "cost"))
      throw usage_error("--eta applies only with --goal cost");
  });
  CLI::Option* limits =
      t.text("limits", 0, "HI:LO:STEP",
             "Only these limits, in watts: from HI down to LO in steps of STEP, or a list such as "
             "400,350,300. Each must be within every GPU's range.",
             "the GPUs' whole range", [this](const std::string& v) {
               tune_.limits = control::parse_limits("--limits", v);
               tune_.limits_text = v;
             });
  CLI::Option* step = t.number(
      "limit-step", "W", "The grid of limits over the GPUs' range, in watts.", "25", 1, 1000,
      "a number of watts from 1 to 1000, e.g. 25", [this](double v, const std::string&) {
        tune_.limit_step_mw = static_cast<std::uint32_t>(v * 1000.0);
      });
  t.excludes(limits, step);
  t.count("settle-steps", "N", "Steps left out after each change of limit.", "2", 0, 1000, "steps",
          [this](std::uint64_t n) { tune_.settle_steps = n; });
  t.count("profile-steps", "N", "Steps measured at each limit.", "8", 1, 100000, "steps",
          [this](std::uint64_t n) { tune_.profile_steps = n; });
  t.flag("per-gpu", 0,
         "A limit per GPU, each from its own energy per step (with the job's time per step), "
         "instead of one for all.",
         tune_.per_gpu);
  t.flag("dry-run", 0,
         "Say which GPUs, limits and steps tune would use, whether it may, and where its journal "
         "goes; change nothing and run nothing.",
         tune_.dry_run);
  t.flag("restore", 0,
         "Set back every GPU whose limit a joules left changed (after a SIGKILL or a power loss), "
         "and exit.",
         restore_);
}

int tune_command::run(std::vector<std::string> positional) {
  tune_.goal.kind = *tuning::goal_from(goal_);
  if (restore_) {
    if (!positional.empty()) {
      throw usage_error("joules tune --restore runs no command; see joules tune --help");
    }
    return session::restore_limits_on_request();
  }
  if (tune_.dry_run && positional.empty()) {
    session::measure_settings s = options_.settings;
    return session::tune_dry_run(s, tune_);
  }
  session::measure_settings s = finish_measure(options_, std::move(positional), "tune");
  if (tune_.dry_run) return session::tune_dry_run(s, tune_);
  return session::tune(s, wrap_.steps, finish_wrap(wrap_), tune_);
}

}  // namespace

std::unique_ptr<options::command> make_tune_command() {
  return std::make_unique<tune_command>();
}

}  // namespace joules::cli
