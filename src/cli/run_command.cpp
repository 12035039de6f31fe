// `joules run`: the total energy of any command, with no interference with it.

#include "cli/commands.hpp"
#include "cli/shared_options.hpp"
#include "session/run.hpp"

namespace joules::cli {
namespace {

constexpr options::command_text kRunText{
    "run", "total energy of a command, with no interference with it",
    "[OPTIONS] [--] CMD [ARGS...]",
    "Runs CMD with its stdin, stdout and stderr untouched, measures the energy of the GPUs this "
    "job may use from a background thread, and prints one summary line on stderr when CMD ends: "
    "total energy, duration, average and peak power, and how the numbers were obtained (counter: "
    "the GPUs' energy counters; polled: integrated power readings; simulated: --backend sim).\n"
    "Signals joules receives (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2) are passed to "
    "CMD's process group, and joules exits with CMD's exit status (128+N after death by signal "
    "N). Bad options exit with status 2 before CMD starts; 127 and 126 mean CMD was not found or "
    "cannot be run; 125 means joules itself could not measure (no GPU, no driver).",
    "joules run -- torchrun --nproc_per_node=8 train.py\n"
    "joules run --gpus 0,1 -o run.jsonl --label config=lr3e-4 -- python train.py\n"
    "joules run --backend sim --sim-gpus 8 -- sleep 5"};

class run_command final : public options::command {
 public:
  const options::command_text& text() const override { return kRunText; }
  void declare(options::option_table& t) override {
    t.positional(options::positional_kind::command);
    declare_measure(t, options_, "run");
  }
  int run(std::vector<std::string> positional) override {
    return session::run(finish_measure(options_, std::move(positional), "run"));
  }

 private:
  measure_options options_;
};

}  // namespace

std::unique_ptr<options::command> make_run_command() {
  return std::make_unique<run_command>();
}

}  // namespace joules::cli
