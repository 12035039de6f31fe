#pragma once
// The numbers of one message and what names them: what the counter learner
// (steps/counter_learner.hpp) works from.  A message (a line without its timestamps, levels and
// rank prefixes) is reduced to a template, its text with every number masked, so that the lines
// one logging statement prints share a template whatever their values.  Every whole number in
// it is a field: its value, the total after it ("N/M"), the word that names it and where it
// stands (after a key, in brackets, at the start of the message, as the end of a range), and
// what that word makes it (a step counter, the global one, an epoch, a count of samples).  The
// message as a whole is described too: whether it carries training quantities, evaluation
// results, or is a notice (a checkpoint, a resume) in which a number is never a step.  Pure.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace joules::steps {

enum class field_role : std::uint8_t {
  none,     // named by nothing the learner knows (a loss, a layer index, a port)
  step,     // step, iter, iteration, update, batch, tick, round, "Up.", "N iter"
  global,   // global_step, total_step, current_steps, num_updates, training_iteration
  epoch,    // epoch, ep, "Epoch[N]", "N epoch"
  samples,  // samples, images, examples, sentences, tokens, kimg: a count of data, not steps
};

enum class field_place : std::uint8_t {
  other,
  keyed,        // after its key: "iter: 19", "Up. 14000", "\"current_steps\": 3200"
  bracket,      // in brackets: "[900]", "Batch [40]", "[  50/1251 (4%)]"
  leading,      // the message starts with it: "145: 4.54, 7.31 avg", "0:\tlearn: 0.65"
  range_end,    // "683-1364batch": the end of a range of steps
  after_epoch,  // right after an epoch: "Epoch  1, 12900/37527;" (a per-epoch counter)
  bar,          // a progress bar's count: " 10%|█         | 100/1000 [00:10<01:30, 10.00it/s]"
};

struct field {
  std::uint64_t value = 0;
  std::optional<std::uint64_t> total;  // the M of "N/M"
  std::string_view key;                // the naming word as printed, or empty
  std::uint16_t pos = 0;               // byte offset in the message
  std::uint8_t index = 0;              // its rank among the message's whole numbers
  field_role role = field_role::none;
  field_place place = field_place::other;
  // Named in passing ("at step 500", "from iteration 3"), or for another loop ("eval step 100",
  // "warmup step 5"): never the training step counter.
  bool not_training = false;
};

struct line_fields {
  static constexpr std::size_t kMaxFields = 24;

  std::uint64_t template_hash = 0;
  std::array<field, kMaxFields> fields{};
  std::uint8_t count = 0;
  // A hash of the values with a fraction part (metrics, times): lines of one template whose
  // counter advances while these change are a training loop; a table whose first column counts
  // up while nothing else moves is not.
  std::uint64_t value_hash = 0;
  bool float_values = false;
  // A training quantity is named on the line and a value is there: loss, lr, accuracy, auc,
  // rmse, perplexity, time, speed, rate, ...
  bool metric_values = false;
  // A value with a fraction part right after a name the learner need not know: "D: 0.51",
  // "elbo -120.5", "F1=0.75" (the quantities of a trainer's own vocabulary).
  bool named_values = false;
  bool record_row = false;    // the message is one key and one number (a YAML line, a table row)
  bool table_row = false;     // such a row drawn in a table: "|    iterations   | 18   |"
  bool eval_tag = false;      // [valid], "Validation", "Test set:", "valid on", "results:"
  bool eval_values = false;   // values named for evaluation: val_loss, valid's l2, Test-accuracy
  bool eval_word = false;     // eval, valid, validation, test, ... anywhere on the line
  bool train_values = false;  // values named for training, or unmarked loss/lr/accuracy
  bool notice = false;        // saving, checkpoint, snapshot, loading, resuming, "not in top"
  // A loop that is not training: loading, downloading, mapping, tokenizing, ... (the progress
  // bars of data preparation).
  bool other_loop = false;
  bool resume = false;  // resuming, restored, restarting: the counter may go back
};

// Reads `message` into `out` (which it resets).  Only the first kMaxFields whole numbers are
// fields; the template covers the whole message.
void read_fields(std::string_view message, line_fields& out);

// Whether `message` may hold a step counter, an epoch, a resume or an evaluation's results:
// a whole number named or placed as counters are, or a first word of evaluation.  Much cheaper
// than read_fields (no template, no description, done at the first such number): most lines of
// a log have numbers and nothing that counts steps.  `scratch` is overwritten.
bool may_hold_counter(std::string_view message, line_fields& scratch);

// The template of `message` as text, numbers as '#' (what --explain shows).
std::string template_text(std::string_view message);

std::string_view to_string(field_role r);

}  // namespace joules::steps
