// `joules sweep`: the command run at each power limit of a list; energy against time per step,
// the Pareto front and its knee.

#include "cli/commands.hpp"
#include "cli/shared_options.hpp"
#include "control/limit_plan.hpp"
#include "session/sweep.hpp"
#include "util/error.hpp"

namespace joules::cli {
namespace {

constexpr std::uint64_t kMaxSteps = 1ULL << 40U;

constexpr options::command_text kSweepText{
    "sweep", "energy and time per step at each power limit of a list",
    "--limits HI:LO:STEP [OPTIONS] [--] CMD [ARGS...]",
    "Runs CMD once at each power limit of --limits, highest first, measured as by joules wrap: "
    "with --steps N each run ends once N steps past the warm-up (--warmup-steps) are measured, "
    "else each runs to its end. Before each run the GPUs' limit is set (the limits before are "
    "written to a journal first), and after it the limit is set back.\n"
    "Prints a table of energy and time per step (per run when CMD prints no step lines), "
    "marks the Pareto front (the limits no other beats on both) and its knee (past it each "
    "joule saved costs disproportionately more time); --json prints the same as one JSON "
    "object, --svg draws it (docs/tuning.md). NVIDIA, AMD and Intel GPUs alike.\n"
    "Changing a power limit needs root or CAP_SYS_ADMIN: without it sweep stops before CMD "
    "starts.",
    "joules sweep --limits 700:300:100 --steps 50 -- python train.py\n"
    "joules sweep --limits 400,350,300 --svg sweep.svg -- ./my_trainer\n"
    "joules sweep --dry-run --limits 400:200:25 -- python train.py"};

class sweep_command final : public options::command {
 public:
  const options::command_text& text() const override { return kSweepText; }
  void declare(options::option_table& t) override;
  int run(std::vector<std::string> positional) override;

 private:
  measure_options options_;
  wrap_options wrap_;
  session::sweep_settings sweep_;
};

void sweep_command::declare(options::option_table& t) {
  t.positional(options::positional_kind::command);
  session::measure_settings& s = options_.settings;
  declare_gpus(t, s.gpus);
  declare_backend(t, s.backend);
  declare_sim(t, s.backend);
  t.group("Sweep");
  t.text("limits", 0, "HI:LO:STEP",
         "The limits, in watts: from HI down to LO in steps of STEP, or a list such as "
         "400,350,300. Each must be within every GPU's range.",
         "",
         [this](const std::string& v) {
           sweep_.limits = control::parse_limits("--limits", v);
           sweep_.limits_text = v;
         })
      ->required();
  t.count("steps", "N", "Measured steps per limit; the command is then ended (SIGTERM).",
          "the command runs to its end", 1, kMaxSteps, "steps",
          [this](std::uint64_t n) { sweep_.steps = n; });
  t.flag("dry-run", 0,
         "Say which GPUs and limits sweep would use, whether it may, and where its journal goes; "
         "change nothing and run nothing.",
         sweep_.dry_run);
  t.group("Output");
  t.text("output", 'o', "FILE",
         "Write the JSONL records of every run (docs/jsonl-schema.md) to FILE, each run's records "
         "labelled power_limit_w. FILE is checked before the command starts and truncated.",
         "", s.output);
  t.flag("json", 0, "Print the results as one JSON object on stdout instead of the table.",
         sweep_.json);
  t.text("svg", 0, "FILE", "Draw energy against time per step, the front and the knee, as SVG.", "",
         sweep_.svg);
  declare_wrap(t, wrap_);
}

int sweep_command::run(std::vector<std::string> positional) {
  // Only the GPUs are swept; CPU and DRAM would only slow each run's start.
  options_.settings.backend.components.cpu = false;
  options_.settings.backend.components.dram = false;
  if (sweep_.dry_run && positional.empty()) {
    return session::sweep(options_.settings, wrap_.steps, finish_wrap(wrap_), sweep_);
  }
  const session::measure_settings s = finish_measure(options_, std::move(positional), "sweep");
  return session::sweep(s, wrap_.steps, finish_wrap(wrap_), sweep_);
}

}  // namespace

std::unique_ptr<options::command> make_sweep_command() {
  return std::make_unique<sweep_command>();
}

}  // namespace joules::cli
