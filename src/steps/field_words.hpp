#pragma once
// The words the field reader (steps/fields.cpp) names numbers and describes messages by: which
// keys name a step counter, the global one, an epoch or a count of samples; which words name
// training quantities, evaluation, notices and the loops of data preparation.  A general
// vocabulary, not any trainer's format.  Internal to src/steps; pure.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "steps/fields.hpp"

namespace joules::steps {

bool eq_ci(std::string_view a, std::string_view b);

// What a key makes the number after it: "iter" a step counter, "global_step", "num_updates" and
// "training_iteration" the global one, "epoch" an epoch, "images" or "Sen." a count of samples;
// "warmup_steps", "save_steps", "max_iter" nothing.
field_role role_of_key(std::string_view key);
// A key without the punctuation around it ("Up." -> "Up").
std::string_view trim_key(std::string_view key);
bool names_counter(std::string_view word);  // a step, epoch or samples word
bool is_epoch_word(std::string_view word);
// "at step 500", "from iteration 3": a step mentioned, not a step line's counter.
bool is_mention_word(std::string_view word);
// "eval step 100", "warmup step 5", "Iter(val)": the counter of another loop than training.
bool is_other_loop_key(std::string_view word);
// A unit right after a number ("58s", "6736Mb"): the number is a quantity, not a counter.
bool unit_word(std::string_view w);
// A tqdm bar's count: " 10%|█  | 100/1000 [00:10<01:30, 10.00it/s]" (the number from `start`,
// its total ending at `end`), by the unit of its rate: iterations of a loop (it, batch, step),
// epochs ("2/2 [07:43<00:00, 231.64s/epoch]"), or none (not a bar, or one counting data: B,
// examples, tokens).  `unsized_bar_count`: a described bar over a loop of unknown length,
// "Epoch #1: 222it [02:03,  1.79it/s, ...]" (the number ending at `end`).
// Whether the number at `start` opens a bracket ("[0-100]", "[   1-  10, 0.00%]").
bool opens_bracket(std::string_view s, std::size_t start);
// A row of a table drawn with bars: "|    n_updates        | 99       |".
bool drawn_row(std::string_view s);
// "n_updates", "n_steps": a count of updates named in a table of training statistics.
bool counted_updates(std::string_view key);
// The word right after a number ("1epoch", "91300 iter") when it names a counter, or empty.
std::string_view key_after(std::string_view s, std::size_t end);
enum class bar_unit : std::uint8_t { none, iterations, epochs };
bar_unit bar_count(std::string_view s, std::size_t start, std::size_t end);
bar_unit unit_of_bar(std::string_view unit);
bool unsized_bar_count(std::string_view s, std::size_t start, std::size_t end);

// Whether the value with a fraction part at `start` follows a name: "D: 0.51", "F1=0.75",
// "elbo -120.5" (1), a name after a word of evaluation: "Validation bpb: 3.30", "val D: 0.4"
// (2), or not (0).  After blanks alone the name is a lower-case word of two letters or more, so
// that "Python 3.10" or "CUDA 11.8" name no quantity.
// `evals`: the message has a word of evaluation before `start` (else the name cannot be one, nor
// follow one, and the words are not looked up).
int value_named(std::string_view s, std::size_t start, bool evals);

enum class word_class : std::uint8_t {
  none,
  metric,      // auc, rmse, error, perplexity, time, rate, speed, ...
  loss_like,   // loss, lr, learning, acc, accuracy
  eval,        // val, valid, validation, eval, test, dev, sanity
  train,       // train, training, learn
  notice,      // checkpoint, saving, saved, snapshot, loading, writing
  resume,      // resume, resuming, restored, restart, ...
  results,     // results
  other_loop,  // downloading, map, filter, tokenizing, fetching, ... (data preparation)
  top,         // Lightning's "'val_loss' was not in top 1"
};
word_class class_of_word(std::string_view w);

}  // namespace joules::steps
