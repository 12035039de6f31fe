#pragma once
// The step-line parser: one parser used by `joules wrap` and `joules steps`.  It reads a
// trainer's output line by line and says which lines are training steps (and which step), which
// start or end a phase (evaluation, checkpoint), and what metrics they carry.  The formats it
// knows, and how it decides repeats, gaps and restarts, are in docs/step-formats.md.
//
// Pure logic, no I/O.  Not thread-safe: one parser per output stream, fed in order.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "steps/metrics.hpp"
#include "steps/rules.hpp"

namespace joules::steps {

enum class line_kind { none, step, phase_begin, phase_end };
std::string_view to_string(line_kind k);

struct parsed_line {
  line_kind kind = line_kind::none;
  // kind == step: the step number.  As printed, except for counters that restart every epoch
  // with the batches per epoch printed (Lightning, Keras, timm, MMEngine, the ImageNet example):
  // there it is the global batch count, epoch * batches_per_epoch + batch.  Phase lines carry the
  // step they print, if any.
  std::uint64_t step = 0;
  std::optional<std::uint64_t> total;  // "N/M": M (batches per epoch for per-epoch counters)
  // kind == step: steps since the previous step line (1 normally, k when logging every k steps;
  // 1 for the first step line); 0 for a step number seen again (a validation line or another
  // rank's copy of the same line): not a new step.
  std::uint64_t step_gap = 0;
  // The printed step counter went back (a new epoch, a new run): the step is still a new step.
  bool counter_restarted = false;
  // kind == step with a per-epoch counter: the epoch (0-based), as printed or counted from the
  // counter's restarts.
  std::optional<std::uint64_t> epoch;
  // The number of epochs of the run, once the log has said it (Keras "Epoch 1/3", Lightning's
  // "Epoch 0/2" bar, timm's "Scheduled epochs: 300", "max_epochs=12" in a printed
  // configuration); set on every line from then on.
  std::optional<std::uint64_t> epochs;
  std::string phase;  // phase_begin/phase_end: "eval", "checkpoint"
  // Parsed from this line: step lines, eval results, and lines of kind none that only carry
  // metrics for the last step (Hugging Face log dicts, OLMo and Composer metric lines).
  std::vector<metric> metrics;
  // The format that recognised the line ("nanogpt", "hf_trainer", "custom", ...); also set on
  // lines of kind none that a format recognised as not training (a download bar).  Static text.
  std::string_view format;

  // Every field (the format by its name); a replayed line must parse the same.
  bool operator==(const parsed_line&) const = default;
};

class custom_formats;

struct parser_options {
  // Extra formats from --step-regex (see step_parser's constructor).
  std::vector<std::string> custom;
  // Skips the lines no built-in format can match (steps/prefilter.hpp); changes no result.
  bool prefilter = true;
  // The built-in format rules in use (steps/rules.hpp); the general mechanism is always on.
  rule_set rules = rule_set::all();
};

class step_parser {
 public:
  // custom: extra formats from --step-regex: PCRE2 syntax, searched in each line (after colour
  // codes and carriage-return rewrites are removed); the first capture group is the step, an
  // optional group named `total` the total.  Custom formats are tried before the built-in ones.
  // Throws joules::usage_error naming the regex and the PCRE2 error for an invalid one.
  // `prefilter` (steps/prefilter.hpp) skips the lines no format can match; it changes no
  // result, and is off only to show that (tests/steps/step_corpus_test.cpp).
  explicit step_parser(std::vector<std::string> custom = {}, bool prefilter = true);
  explicit step_parser(parser_options options);
  ~step_parser();
  step_parser(step_parser&&) noexcept;
  step_parser& operator=(step_parser&&) noexcept;

  // One line without its trailing newline.  It may contain ANSI colour codes and carriage
  // returns, timestamps, log-level/logger prefixes, rank prefixes ([rank0]:, "0: ").  Each
  // \r-separated segment is read as the terminal showed it, in order (a tqdm bar rewritten in
  // place, then a metrics dict printed on the same line): the result is the last new step among
  // them with the steps of all of them in its gap, else the last phase event, with the metrics of
  // every segment.  Stateful: remembers the last step to compute step_gap, repeats and restarts,
  // the phase it is in, and the counters it has learnt (steps/counter_learner.hpp).
  parsed_line parse(std::string_view line);
  // The same, and why, in one line of text: the rule or the learnt counter that read it, from
  // which field of which template, or why it is not a step (joules steps --explain).
  parsed_line parse(std::string_view line, std::string& why);

 private:
  struct state;
  parsed_line parse_segment(std::string_view segment, std::string* why);
  parsed_line parse_line(std::string_view line, std::string* why);
  std::unique_ptr<custom_formats> custom_;
  std::unique_ptr<state> state_;
  bool prefilter_ = true;
  rule_set rules_;
};

}  // namespace joules::steps
