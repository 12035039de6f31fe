// The options of wrap (and tune, sweep): step formats, tokens and samples per step, the
// prediction, stragglers, and how the command's output is handled.

#include "cli/shared_options.hpp"

namespace joules::cli {
namespace {

constexpr std::string_view kSteps = "Steps";
constexpr std::uint64_t kMaxCount = 1ULL << 50U;

}  // namespace

void declare_wrap(options::option_table& t, wrap_options& out) {
  t.group(kSteps);
  t.repeated("step-regex", "RE",
             "An extra step-line format (PCRE2): the first capture group is the step number; a "
             "group named total, when present, is the number of steps. Check it with joules "
             "steps.",
             [&out](const std::string& v) { out.output.step_regexes.push_back(v); });
  t.count("tokens-per-step", "N", "Tokens in one step, for joules per token.",
          "from the tok/s the trainer prints, when it does", 1, kMaxCount, "tokens",
          [&out](std::uint64_t n) { out.steps.tokens_per_step = n; });
  t.count("samples-per-step", "N", "Samples in one step, for joules per sample.",
          "from the samples/s the trainer prints, when it does", 1, kMaxCount, "samples",
          [&out](std::uint64_t n) { out.steps.samples_per_step = n; });
  t.count("total-steps", "N", "Steps in the whole run, for the prediction.",
          "the M of N/M in step lines", 1, kMaxCount, "steps",
          [&out](std::uint64_t n) { out.steps.total_steps = n; });
  t.count("predict-after", "K", "Predict the whole run once K steps past warm-up are measured.",
          "10", 1, kMaxCount, "steps", [&out](std::uint64_t n) { out.steps.predict_after = n; });
  t.count("warmup-steps", "N", "Steps at the start that predictions and straggler checks ignore.",
          "3", 0, kMaxCount, "steps", [&out](std::uint64_t n) { out.steps.warmup_steps = n; });
  t.number("straggler-threshold", "F",
           "Warn when a GPU's energy per step stays more than this fraction from the median of "
           "the GPUs (steps shorter than 10 ms are not checked).",
           "0.1", 0.001, 0.999, "a fraction from 0.001 to 0.999, e.g. 0.1",
           [&out](double f, const std::string&) { out.steps.straggler_threshold = f; });
  t.count("straggler-window", "N", "Steps over which a straggler must stay apart.", "20", 2, 100000,
          "steps",
          [&out](std::uint64_t n) { out.steps.straggler_window = static_cast<std::size_t>(n); });
  t.group("Output");
  CLI::Option* on = t.flag("inline", 0,
                           "Append each step's energy to its line: energy:...J/step avg:...W. By "
                           "default on the streams that are terminals.",
                           out.inline_energy);
  CLI::Option* off = t.flag("no-inline", 0, "Leave the command's output untouched.", out.no_inline);
  t.excludes(on, off);
  t.flag("no-pty", 0,
         "Give the command pipes instead of pseudo-terminals for its stdout and stderr (one pipe "
         "for both when joules' stdout and stderr are one file), and set PYTHONUNBUFFERED=1. "
         "Non-Python programs then block-buffer their stdout and step timing suffers.",
         out.no_pty);
}

session::wrap_output finish_wrap(const wrap_options& o) {
  session::wrap_output out = o.output;
  if (o.inline_energy) out.inline_energy = true;
  if (o.no_inline) out.inline_energy = false;
  out.use_pty = !o.no_pty;
  return out;
}

}  // namespace joules::cli
