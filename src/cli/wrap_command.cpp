// `joules wrap`: energy per training step, per phase and per token; prediction of the whole run.

#include "cli/commands.hpp"
#include "cli/shared_options.hpp"
#include "session/wrap.hpp"

namespace joules::cli {
namespace {

constexpr options::command_text kWrapText{
    "wrap", "energy per step, phase and token; a prediction of the whole run",
    "[OPTIONS] [--] CMD [ARGS...]",
    "Runs CMD like joules run, and reads its stdout and stderr as it goes: both pass through to "
    "joules' stdout and stderr byte for byte, and the lines that report training steps (the "
    "formats of nanoGPT, llm.c, Megatron, DeepSpeed, Hugging Face, Lightning and many more, on "
    "either stream; see joules steps) split the run's energy into windows: setup (before the "
    "first step line), one per step, phases such as evaluation, and the tail after the last "
    "step. Every joule of the run lands in exactly one window; the windows add up to the total "
    "exactly.\n"
    "Each line is stamped when it arrives and the energy at that instant comes from the GPUs' "
    "readings around it, so nothing on the output path waits for the GPU. CMD's stdout is a "
    "pseudo-terminal, so C, C++, Rust and Python trainers alike write lines as they happen; its "
    "stderr is one too when joules' stderr is a terminal. When joules' stdout and stderr are the "
    "same terminal or file, CMD gets one channel for both and their order is kept.\n"
    "With --output, step, phase, prediction and straggler records go to the JSONL file "
    "(docs/jsonl-schema.md), and CMD's output still goes to stdout. Records on a stream CMD "
    "writes too (--output -, --json) and joules' own messages go out between CMD's lines, never "
    "inside one.",
    "joules wrap -- torchrun --standalone --nproc_per_node=8 train_gpt.py\n"
    "joules wrap --output run.jsonl --tokens-per-step 524288 -- python train.py\n"
    "joules wrap --step-regex 'it=(\\d+)/(?<total>\\d+)' -- ./my_trainer"};

class wrap_command final : public options::command {
 public:
  const options::command_text& text() const override { return kWrapText; }
  void declare(options::option_table& t) override {
    t.positional(options::positional_kind::command);
    declare_measure(t, options_, "wrap");
    declare_wrap(t, wrap_);
  }
  int run(std::vector<std::string> positional) override {
    // Without a URL, a server's own throughput lines give estimates.
    options_.settings.inference.logs = true;
    return session::wrap(finish_measure(options_, std::move(positional), "wrap"), wrap_.steps,
                         finish_wrap(wrap_));
  }

 private:
  measure_options options_;
  wrap_options wrap_;
};

}  // namespace

std::unique_ptr<options::command> make_wrap_command() {
  return std::make_unique<wrap_command>();
}

}  // namespace joules::cli
