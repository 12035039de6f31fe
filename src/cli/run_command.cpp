// `joules run`: the total energy of any command, with no interference with it.  The command's
// stdin, stdout and stderr are its own; joules only watches it from the sampler thread and
// prints one line when it ends.

#include <cstdio>
#include <cstdlib>

#include "cli/commands.hpp"
#include "cli/measure.hpp"
#include "proc/child.hpp"

namespace joules::cli {

const command_spec& run_spec() {
  static const command_spec spec{
      "run",
      "total energy of a command, with no interference with it",
      "[OPTIONS] [--] CMD [ARGS...]",
      "Runs CMD with its stdin, stdout and stderr untouched, measures the energy of the GPUs this "
      "job may use from a background thread, and prints one summary line on stderr when CMD ends: "
      "total energy, duration, average and peak power, and how the numbers were obtained (counter: "
      "the GPUs' energy counters; polled: integrated power readings; simulated: --backend sim).\n"
      "Signals joules receives (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2) are passed to "
      "CMD's process group, and joules exits with CMD's exit status (128+N after death by signal "
      "N). Bad options exit with status 2 before CMD starts; 127 and 126 mean CMD was not found or "
      "cannot be run; 125 means joules itself could not measure (no GPU, no driver).",
      measure_options(),
      positional_kind::command,
      "joules run -- torchrun --nproc_per_node=8 train.py\n"
      "joules run --gpus 0,1 --output run.jsonl --label config=lr3e-4 -- python train.py\n"
      "joules run --backend sim --sim-gpus 8 -- sleep 5"};
  return spec;
}

int run_main(const parsed_args& args) {
  const measure_settings settings = read_measure_settings(args, "run");
  measurement m(settings, "run");
  child_process child;
  m.start();
  spawn_options options;
  options.argv = settings.command;
  child.spawn(options);
  m.child_started(child.start_time());
  child.wait();
  for (const auto& w : m.child_ended(child))
    m.add_window(w);
  const int status = m.finish(child);
  if (m.must_exit_hard()) {
    // The sampler is stuck in a driver call that never returned; leave without waiting for it.
    std::fflush(nullptr);
    std::_Exit(status);
  }
  return status;
}

}  // namespace joules::cli
