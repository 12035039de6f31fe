// Global steps from the counters the learner took (steps/counter_learner.hpp): a counter that
// restarts every epoch becomes (epoch - base) * per-epoch + counter, one whose epoch's length is
// not printed and a bar that restarts go on counting.  docs/step-formats.md ("Global
// steps") describes the rules.

#include "steps/counter_learner.hpp"
#include "steps/field_words.hpp"

#include <algorithm>
#include <cstdint>

namespace joules::steps {
namespace {

// a * b + c, or the largest value where that does not fit (counts read from a log are hostile).
std::uint64_t epochs_mul_add(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  if (b != 0 && a > (UINT64_MAX - c) / b) return UINT64_MAX;
  return a * b + c;
}

}  // namespace

counter_learner::global_step counter_learner::globalize(const field& c, std::optional<epoch_seen> e,
                                                        template_state& t, bool others_between) {
  global_step out;
  out.total = c.total;
  const std::uint64_t v = c.value;
  if (c.role == field_role::global) {
    out.step = v;
    return out;
  }
  if (e) {
    if (!epoch_base_) {
      // Epochs count from 1 ("Epoch 1/10", fairseq's "| epoch 005") unless the first one seen
      // is 0.  A log that starts later (a resumed run, an excerpt) says nothing either way: its
      // gaps are right, its step may be one epoch off.  One base for the run: the lines of one
      // trainer count epochs one way, whichever template they have.
      epoch_base_ = e->value == 0 ? 0 : 1;
    }
    const std::uint64_t base = *epoch_base_;
    out.epoch = e->value >= base ? e->value - base : 0;
    // "0/299" is the first of 300 epochs, "1/300" the first of 300.
    if (e->total && *e->total > 0) out.epochs = *e->total + (base == 0 ? 1 : 0);
    const bool changed = t.last_epoch && e->value != *t.last_epoch;
    // An epoch that goes back is a new run: its count starts again.
    const bool new_run = changed && e->value < *t.last_epoch;
    if (new_run) {
      // Its epochs are numbered as the run before numbered them: with the length an epoch had
      // there, the count starts again from the epoch it says (none known: from 0).
      t.epoch_sum = epochs_mul_add(*out.epoch, t.epoch_len, 0);
      t.counter_is_global = false;
    }
    const std::uint64_t epochs_skipped =
        changed && !new_run ? e->value - *t.last_epoch - 1 : std::uint64_t{0};
    // A bar restarts every epoch, whatever its count was ("Epoch #3: 228it" after "Epoch #2:
    // 219it", Tianshou).
    const bool bar = c.place == field_place::bar;
    if (changed && !bar && t.last_value && v > *t.last_value && e->value > *t.last_epoch)
      t.counter_is_global = true;  // PaddleSeg's "epoch: 2, iter: 520/40000"
    t.last_epoch = e->value;
    if (t.counter_is_global) {
      out.step = v;
      return out;
    }
    if (c.total && *c.total > 0) {
      out.rolled = changed && t.last_value && v <= *t.last_value;
      out.step = *out.epoch * *c.total + v;
      return out;
    }
    // The batches of an epoch are not printed: an epoch holds as many as its counter showed
    // (its last count, one more when the counter counts from 0), and an epoch the log skipped
    // (an excerpt) as many as the longest epoch seen.
    if (changed && !new_run && t.last_value && (v <= *t.last_value || bar)) {
      const std::uint64_t shown = epochs_mul_add(1, *t.last_value, t.zero_based ? 1 : 0);
      t.epoch_len = std::max(t.epoch_len, shown);
      t.epoch_sum =
          epochs_mul_add(epochs_skipped, t.epoch_len, epochs_mul_add(1, t.epoch_sum, shown));
      out.rolled = true;
    }
    if (changed || !t.last_value) t.zero_based = t.zero_based || v == 0;
    out.step = epochs_mul_add(1, t.epoch_sum, v);
    return out;
  }
  // No epoch printed: a counter that goes back to where it began is a new epoch, and the count
  // goes on (a bar that restarts every epoch: "190/190" in the second epoch is step 380).
  if (!t.last_value) t.zero_based = v == 0;
  // A count named a step with neither total nor epoch ("Step      1: Ran 1 train steps" after
  // "Step   1000: ...", Trax) counts the run: back at its start, it is a new run.  Batches and
  // iterations without them are often an epoch's.
  const bool run_count = c.place == field_place::keyed && !c.total &&
                         (eq_ci(trim_key(c.key), "step") || eq_ci(trim_key(c.key), "steps"));
  if (t.last_value && v < *t.last_value && t.stride > 0 && v <= t.stride && !run_count &&
      (!c.total || c.total == t.last_total)) {
    // A counter from 0 has shown one more than its last count.
    t.epoch_sum += c.total ? *c.total : epochs_mul_add(1, *t.last_value, t.zero_based ? 1 : 0);
    t.zero_based = t.zero_based || v == 0;
    out.rolled = true;
  } else if (t.last_value && v < *t.last_value &&
             !(c.place == field_place::bar && c.total && v == *c.total)) {
    // A counter that goes back elsewhere: a new run, or a resume from a checkpoint.  It counts
    // from where it says.
    t.epoch_sum = 0;
  } else if (c.place == field_place::bar && c.total && v == *c.total && t.last_value &&
             *t.last_value == v && c.total == t.last_total && others_between) {
    // A finished bar drawn again after other output: the next epoch's bar, of which the log
    // kept only the last state (notebook output: "469/469" after every epoch).
    t.epoch_sum += *c.total;
    out.rolled = true;
  }
  out.step = t.epoch_sum + v;
  return out;
}

}  // namespace joules::steps
