// `joules wrap`: energy per training step, per phase and per token; prediction of the whole run.

#include "cli/commands.hpp"
#include "cli/shared_options.hpp"
#include "session/wrap.hpp"

namespace joules::cli {
namespace {

constexpr std::string_view kSteps = "Steps";
constexpr std::uint64_t kMaxCount = 1ULL << 50U;

constexpr options::command_text kText{
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
  const options::command_text& text() const override { return kText; }
  void declare(options::option_table& t) override;
  int run(std::vector<std::string> positional) override {
    if (inline_) output_.inline_energy = true;
    if (no_inline_) output_.inline_energy = false;
    output_.use_pty = !no_pty_;
    return session::wrap(finish_measure(options_, std::move(positional), "wrap"), steps_, output_);
  }

 private:
  measure_options options_;
  wrap_settings steps_;
  session::wrap_output output_;
  bool inline_ = false;
  bool no_inline_ = false;
  bool no_pty_ = false;
};

void wrap_command::declare(options::option_table& t) {
  t.positional(options::positional_kind::command);
  declare_measure(t, options_);
  t.group(kSteps);
  t.repeated("step-regex", "RE",
             "An extra step-line format (PCRE2): the first capture group is the step number; a "
             "group named total, when present, is the number of steps. Check it with joules "
             "steps.",
             [this](const std::string& v) { output_.step_regexes.push_back(v); });
  t.count("tokens-per-step", "N", "Tokens in one step, for joules per token.",
          "from the tok/s the trainer prints, when it does", 1, kMaxCount, "tokens",
          [this](std::uint64_t n) { steps_.tokens_per_step = n; });
  t.count("samples-per-step", "N", "Samples in one step, for joules per sample.",
          "from the samples/s the trainer prints, when it does", 1, kMaxCount, "samples",
          [this](std::uint64_t n) { steps_.samples_per_step = n; });
  t.count("total-steps", "N", "Steps in the whole run, for the prediction.",
          "the M of N/M in step lines", 1, kMaxCount, "steps",
          [this](std::uint64_t n) { steps_.total_steps = n; });
  t.count("predict-after", "K", "Predict the whole run once K steps past warm-up are measured.",
          "10", 1, kMaxCount, "steps", [this](std::uint64_t n) { steps_.predict_after = n; });
  t.count("warmup-steps", "N", "Steps at the start that predictions and straggler checks ignore.",
          "3", 0, kMaxCount, "steps", [this](std::uint64_t n) { steps_.warmup_steps = n; });
  t.number("straggler-threshold", "F",
           "Warn when a GPU's energy per step stays more than this fraction from the median of "
           "the GPUs (steps shorter than 10 ms are not checked).",
           "0.1", 0.001, 0.999, "a fraction from 0.001 to 0.999, e.g. 0.1",
           [this](double f, const std::string&) { steps_.straggler_threshold = f; });
  t.count("straggler-window", "N", "Steps over which a straggler must stay apart.", "20", 2, 100000,
          "steps",
          [this](std::uint64_t n) { steps_.straggler_window = static_cast<std::size_t>(n); });
  t.group("Output");
  CLI::Option* on = t.flag("inline", 0,
                           "Append each step's energy to its line: energy:...J/step avg:...W. By "
                           "default on the streams that are terminals.",
                           inline_);
  CLI::Option* off = t.flag("no-inline", 0, "Leave the command's output untouched.", no_inline_);
  t.excludes(on, off);
  t.flag("no-pty", 0,
         "Give the command pipes instead of pseudo-terminals for its stdout and stderr (one pipe "
         "for both when joules' stdout and stderr are one file), and set PYTHONUNBUFFERED=1. "
         "Non-Python programs then block-buffer their stdout and step timing suffers.",
         no_pty_);
}

}  // namespace

std::unique_ptr<options::command> make_wrap_command() {
  return std::make_unique<wrap_command>();
}

}  // namespace joules::cli
