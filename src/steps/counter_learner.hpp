#pragma once
// The general mechanism: step counters in formats nobody wrote a rule for.  Each message the
// built-in formats (steps/formats.hpp) did not take is read into a template and its fields
// (steps/fields.hpp); per run and per template the learner decides which field, if any, is the
// step counter:
//
//  - on the first line of a template, from what the line shows: a field named like a step
//    counter (step, iter, Up., tick, global_step, "N iter", "683-1364batch") or standing where
//    counters stand (the start of the message, "[N]" first, a fraction "i = 5 / 100") on a line
//    that carries training quantities (loss, lr, accuracy, auc, rmse, time, rate, ...); a global
//    counter wins over a local one, a progress bar's count over a step named in its description;
//    an epoch beside the counter makes it per-epoch;
//  - on later lines, from how the field behaves: a candidate that advances by a steady stride
//    while the line's other values change is taken from its third line even without names;
//  - against the run: once steps are under way, a template whose counter neither repeats nor
//    follows the run's step (TFLearn's sample count beside its step line) is held back until it
//    is the only counter left;
//  - an epoch is the step when the log counts nothing finer: a line of training values per
//    epoch (RecBole's "epoch 3 training [time: 1.8s, train loss: 157.2]"), or an epoch announced
//    again with no step since the last announcement (nnU-Net's "epoch:  7").
//
// A line is decided when it arrives: wrap places a boundary at its arrival, and a boundary cannot
// be placed at an earlier line later (docs/step-formats.md, "The general mechanism").  Pure
// logic; not thread-safe (one per parser).

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "steps/fields.hpp"
#include "steps/formats.hpp"

namespace joules::steps {

class counter_learner {
 public:
  // What the learner makes of `message` (with its fields `f`), the parser's `line`-th line
  // (rewrites counted).  On a step, sets `m` to it (step global, format "learnt") and returns
  // true; an evaluation result sets m.kind to phase_end.  `why`, when not null, receives the
  // reason (joules steps --explain).
  bool observe(std::string_view message, const line_fields& f, std::uint64_t line, match& m,
               std::string* why);

  // Whether a step `g` read from a template may be the run's step: the run's own template always
  // is; another repeats the run's step, follows it, jumps ahead (a log resumed later), goes back
  // a little (a late copy) or, when named as a step counter, starts again (a new run).  It is not
  // when it reads the run's step times a batch size (TFLearn's "iter: 00512/55000" samples
  // beside its "Training Step: 8"), nor an unnamed counter far behind the run.
  bool follows_run(std::uint64_t template_hash, std::uint64_t g, bool named) const;
  // Every new step of the run, whichever format read it: the learner holds other templates to
  // it.  `template_hash`: the template of the line, when a learnt counter or the generic rule
  // read it.
  void on_new_step(std::uint64_t step, std::uint64_t gap,
                   std::optional<std::uint64_t> template_hash);
  // A resume or restart notice: the next counter that goes back is a new start, not a late copy.
  bool resume_pending() const { return resume_pending_; }
  void note_resume() { resume_pending_ = true; }
  // A line with no number (or none that counts) may head a table ("     Epoch   gpu_mem
  // box ...", spaCy's "E    #       LOSS TOK2VEC ..."): the roles of its first two columns name
  // the unnamed numbers that open the rows below it.
  // A header whose counter column is not among its first two (Vowpal Wabbit's "loss  last
  // counter  weight  label ..." under "average  since  example ...") names the whole number
  // under that column instead: the rows below are read for it (`column_counter()`).
  void note_header(std::string_view message);
  bool column_counter() const { return column_end_ != 0; }
  void clear_resume() { resume_pending_ = false; }
  // Whether a line of its own has announced an epoch ("Epoch 2/5"): the counters after it may
  // count per epoch.
  bool epoch_announced() const { return announced_epoch_.has_value(); }
  // The run's last new step, when there is one.
  std::optional<std::uint64_t> last_step() const { return last_step_; }

 private:
  static constexpr std::uint8_t kNoField = 0xff;
  static constexpr std::size_t kMaxTemplates = 512;

  struct template_state {
    std::uint8_t counter = kNoField;  // the counter's rank among the message's whole numbers
    std::uint8_t epoch = kNoField;
    bool chosen = false;
    bool adopted = false;     // its counter is a step counter
    bool epoch_step = false;  // its counter is an epoch, the run's step (nothing finer)
    std::uint16_t lines = 0;
    std::optional<std::uint64_t> last_value;  // the counter as printed
    std::uint64_t stride = 0;
    std::uint8_t steady = 0;  // transitions in a row with that stride while values moved
    std::uint64_t value_hash = 0;
    std::uint64_t last_line = 0;         // the parser's line it was last seen on (from 1)
    std::uint64_t steps_at_last = 0;     // the run's new steps when it was last seen
    std::uint64_t new_steps_before = 0;  // the run's new steps when it was first seen
    // Per-epoch counting: the steps of the epochs before the current one.
    std::optional<std::uint64_t> last_epoch;
    std::uint64_t epoch_sum = 0;
    std::uint64_t epoch_len = 0;     // the most batches an epoch showed, when none is printed
    bool zero_based = false;         // the counter counts from 0 (an epoch began at 0)
    bool counter_is_global = false;  // it did not go back when the epoch changed
    std::optional<std::uint64_t> last_total;
    std::optional<std::uint64_t> deferred_since;  // the run's step when it was held back
    std::optional<metric_style> style;            // how its metrics are printed (once known)
  };

  struct choice {
    const field* counter = nullptr;
    const field* epoch = nullptr;
    int score = 0;
  };
  choice choose(std::string_view message, const line_fields& f, template_state& t) const;
  // The epoch a counter belongs to: printed beside it, or announced on a line of its own
  // ("Epoch 2/5" before Keras' bars).
  struct epoch_seen {
    std::uint64_t value = 0;
    std::optional<std::uint64_t> total;
  };
  struct global_step {
    std::uint64_t step = 0;
    std::optional<std::uint64_t> total;  // the counter's total, in steps
    bool rolled = false;                 // an epoch began
    std::optional<std::uint64_t> epoch;
    std::optional<std::uint64_t> epochs;
  };
  // The counter `c` as a global step (steps/counter_epochs.cpp).  `others_between`: other
  // lines came since the template's last one.
  global_step globalize(const field& c, std::optional<epoch_seen> e, template_state& t,
                        bool others_between);
  // An epoch a message announces: "Epoch 2/5" alone, or after a bar at 0 ("  0%|   | 0/469
  // [00:00<?, ?it/s]EPOCH: 0").
  static std::optional<epoch_seen> announced(std::string_view message, const line_fields& f);
  // Rows under a table header: the numbers that open a row named by the header's columns.
  bool name_columns(std::string_view message, const line_fields& fields, line_fields& named) const;
  // The epoch as the run's step (the log counts nothing finer): whether `t` may be taken now.
  // `row_values`: a row of values under a header that names its epoch column.
  bool epoch_is_step(std::string_view message, const line_fields& f, const template_state& t,
                     bool eval, bool announcement, bool row_values) const;

  std::unordered_map<std::uint64_t, template_state> templates_;
  // The template whose counter made the last new step, when a template did.
  std::optional<std::uint64_t> primary_;
  // The first table row taken as a step counter ("| iterations | 18 |"): the other rows of the
  // table count other things (Stable-Baselines3's n_updates beside its iterations).
  std::optional<std::uint64_t> row_counter_;
  bool row_counter_is_update_ = false;
  std::optional<epoch_seen> announced_epoch_;
  std::optional<std::uint64_t> epoch_base_;  // what the run counts epochs from
  std::array<field_role, 2> columns_{field_role::none, field_role::none};
  bool header_values_ = false;  // the header names training values (loss, accuracy, error)
  // The counter column of a header whose first columns count nothing: where its name stands in
  // the header line (0, 0: none), and whether no row has been read under that header yet.
  std::uint16_t column_begin_ = 0;
  std::uint16_t column_end_ = 0;
  bool column_new_table_ = false;
  std::optional<std::uint64_t> last_step_;
  std::uint64_t last_gap_ = 0;
  std::uint64_t new_steps_ = 0;
  // New steps made by counters finer than an epoch: once there are any, an epoch is not a step,
  // until a new run (an epoch that goes back) has shown none of them by its second epoch line.
  std::uint64_t finer_steps_ = 0;
  std::optional<std::uint64_t> last_epoch_;  // the epoch on the last line that had one
  std::uint64_t finer_at_epoch_ = 0;         // finer_steps_ when that line was read
  std::uint32_t run_epochs_ = 0;  // epoch lines of a new run with nothing finer counted yet
  bool resume_pending_ = false;
};

}  // namespace joules::steps
