#include "steps/counter_learner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "steps/scan.hpp"

namespace joules::steps {
namespace {

// How much a field looks like the step counter on its own; 0 or less: not a candidate.
int score_of(const field& f, std::string_view message) {
  if (f.not_training) return -1;
  switch (f.role) {
    case field_role::global:
      return 100;
    case field_role::step:
      if (f.place == field_place::after_epoch) return 50;
      return f.total ? 65 : 60;
    case field_role::epoch:
    case field_role::samples:
      return -1;
    case field_role::none:
      break;
  }
  if (f.place == field_place::bar) return 50;
  if (!f.key.empty()) return 0;  // named, but not as a counter: a loss, a layer, a port
  // "[  50/1251 (  4%)]", "[1][ 50/1000]": a count over a total in brackets is progress.
  if (f.place == field_place::bracket && f.total) return 45;
  // "[0]\ttest-auc:0.89" (XGBoost, LightGBM): a counter in brackets that opens the message.
  if (f.place == field_place::bracket && f.pos <= 4 && !message.empty() && message[0] == '[')
    return 45;
  // "145: 4.54, 7.31 avg loss" (darknet), "0:\tlearn: 0.65" (CatBoost), "3 7.34 s run".
  if (f.place == field_place::leading) return 40;
  return 0;
}

bool eq_ci(std::string_view a, std::string_view b) {
  return a.size() == b.size() && starts_with_ci(a, b);
}

// Rows that name the step and nothing else: RLlib's "training_iteration: 84", Stable-Baselines3's
// "|    iterations           | 18        |".
bool step_row(const line_fields& f, const field& c) {
  return f.record_row && (eq_ci(c.key, "training_iteration") || eq_ci(c.key, "iterations"));
}

// Metrics as "key: value" or as "key value", whichever reads more (steps/metrics.hpp).
metric_style style_of(std::string_view message) {
  std::vector<metric> kv;
  std::vector<metric> spaced;
  scan_metrics(message, metric_style::kv, kv);
  scan_metrics(message, metric_style::spaced, spaced);
  return spaced.size() > kv.size() ? metric_style::spaced : metric_style::kv;
}

}  // namespace

counter_learner::choice counter_learner::choose(std::string_view message, const line_fields& f,
                                                template_state& t) const {
  choice c;
  if (t.chosen) {
    // The template's counter: the same rank in every line of it.
    for (std::size_t i = 0; i < f.count; ++i) {
      const field& x = f.fields[i];
      if (x.index == t.counter) c.counter = &x;
      if (x.index == t.epoch) c.epoch = &x;
    }
    if (c.counter != nullptr) c.score = score_of(*c.counter, message);
    if (t.counter == kNoField || c.counter != nullptr) return c;
    t.chosen = false;  // two statements with one template: choose again
  }
  for (std::size_t i = 0; i < f.count; ++i) {
    const field& x = f.fields[i];
    const int s = score_of(x, message);
    if (s > c.score) {
      c.score = s;
      c.counter = &x;
    }
    if (x.role == field_role::epoch && c.epoch == nullptr) c.epoch = &x;
  }
  t.chosen = true;
  t.counter = c.counter != nullptr ? c.counter->index : kNoField;
  t.epoch = c.epoch != nullptr ? c.epoch->index : kNoField;
  return c;
}

std::uint64_t counter_learner::globalize(const field& c, std::optional<epoch_seen> e,
                                         template_state& t, bool& rolled,
                                         std::optional<std::uint64_t>& epoch,
                                         std::optional<std::uint64_t>& epochs) {
  const std::uint64_t v = c.value;
  if (c.role == field_role::global) return v;
  if (e) {
    if (!epoch_base_) {
      // Epochs printed "e/E" count from 1 unless a 0 is printed; bare ones from what they
      // start at when that is 0 or 1, else from 0.  One base for the run: the lines of one
      // trainer count epochs one way, whichever template they have.
      epoch_base_ = e->value == 0 ? 0 : (e->total || e->value == 1 ? 1 : 0);
    }
    const std::uint64_t base = *epoch_base_;
    epoch = e->value >= base ? e->value - base : 0;
    // "0/299" is the first of 300 epochs, "1/300" the first of 300.
    if (e->total && *e->total > 0) epochs = *e->total + (base == 0 ? 1 : 0);
    const bool changed = t.last_epoch && e->value != *t.last_epoch;
    if (changed && t.last_value && v > *t.last_value && e->value > *t.last_epoch)
      t.counter_is_global = true;  // PaddleSeg's "epoch: 2, iter: 520/40000"
    t.last_epoch = e->value;
    if (t.counter_is_global) return v;
    if (c.total && *c.total > 0) {
      rolled = changed && t.last_value && v <= *t.last_value;
      return *epoch * *c.total + v;
    }
    // The batches of an epoch are not printed: an epoch holds as many as its last counter said.
    if (changed && t.last_value && v <= *t.last_value) {
      t.epoch_sum += *t.last_value;
      rolled = true;
    }
    return t.epoch_sum + v;
  }
  // No epoch printed: a counter that goes back to where it began is a new epoch, and the count
  // goes on (a bar that restarts every epoch: "190/190" in the second epoch is step 380).
  if (t.last_value && v < *t.last_value && t.stride > 0 && v <= t.stride &&
      (!c.total || c.total == t.last_total)) {
    t.epoch_sum += c.total ? *c.total : *t.last_value;
    rolled = true;
  }
  return t.epoch_sum + v;
}

bool counter_learner::observe(std::string_view message, const line_fields& fields, match& m,
                              std::string* why) {
  // Rows under a table header: the number that opens a row is named by the first column.
  line_fields named;
  const bool header = first_column_ != field_role::none && fields.count > 0 &&
                      fields.fields[0].pos == 0 && fields.fields[0].key.empty();
  if (header) {
    named = fields;
    named.fields[0].role = first_column_;
  }
  const line_fields& f = header ? named : fields;
  if (f.resume) resume_pending_ = true;
  // Only templates with a candidate counter are remembered: most lines of a log have numbers
  // and none of them counts steps.
  template_state scratch;
  template_state* t = &scratch;
  const auto it = templates_.find(f.template_hash);
  if (it != templates_.end()) t = &it->second;
  ++t->lines;
  const bool moved = t->lines > 1 && f.value_hash != t->value_hash;
  t->value_hash = f.value_hash;

  const choice c = choose(message, f, *t);
  if (it == templates_.end() && c.counter != nullptr && c.score > 0 &&
      templates_.size() < kMaxTemplates) {
    t = &templates_.emplace(f.template_hash, scratch).first->second;
  }

  // Results of an evaluation: tagged so ("[valid]", "Validation-accuracy=", "Test set:"), or
  // valued for evaluation only, with no counter ahead of the run's step.
  const bool eval = !f.notice && (f.eval_tag || (f.eval_values && !f.train_values)) &&
                    (f.float_values || f.metric_values);
  auto eval_result = [&](std::uint64_t step, std::string_view reason) {
    m.kind = line_kind::phase_end;
    m.phase = "eval";
    m.format = "learnt";
    m.step = step;
    m.metrics_text = message;
    m.style = style_of(message);
    if (why) *why = std::string(reason);
    return true;
  };

  if (c.counter == nullptr || c.score <= 0) {
    // "Epoch 2/5" alone: the epoch of the counters that follow.
    if (f.count == 1 && message.size() <= 24 && f.fields[0].role == field_role::epoch &&
        f.fields[0].key.data() == message.data()) {
      announced_epoch_ = epoch_seen{f.fields[0].value, f.fields[0].total};
    }
    if (eval && new_steps_ > 0) return eval_result(0, "evaluation results (no step counter)");
    if (why) {
      *why = c.counter == nullptr ? "no field that counts steps"
                                  : fmt::format("field #{} ('{}') is not a step counter",
                                                c.counter->index, c.counter->key);
    }
    return false;
  }

  const field& cf = *c.counter;
  // A bar's first draw ("0/870") has not done an iteration yet.
  if (cf.place == field_place::bar && cf.value == 0) {
    if (why) *why = "a progress bar at 0: nothing done yet";
    return false;
  }
  // The bars of evaluation and of data preparation count their own loops: an evaluation bar
  // begins the evaluation and ends it at 100 %.
  if (cf.place == field_place::bar && (f.eval_word || f.other_loop || f.notice)) {
    if (f.eval_word && !f.other_loop && !f.notice && cf.total) {
      m.kind = cf.value >= *cf.total ? line_kind::phase_end : line_kind::phase_begin;
      m.phase = "eval";
      m.format = "learnt";
      m.bar = true;
      if (why) *why = "a progress bar of evaluation";
      return true;
    }
    if (why) *why = "a progress bar of data preparation";
    return false;
  }
  // A counter over another total in the same template is another loop (an evaluation bar
  // beside the training bar).
  if (cf.total && t->adopted && t->last_total && *cf.total != *t->last_total) {
    if (why) *why = fmt::format("counts to {}, not {}: another loop", *cf.total, *t->last_total);
    return false;
  }
  const std::optional<std::uint64_t> prev = t->last_value;
  bool rolled = false;
  std::optional<std::uint64_t> epoch;
  std::optional<std::uint64_t> epochs;
  std::optional<epoch_seen> e;
  if (c.epoch != nullptr) {
    e = epoch_seen{c.epoch->value, c.epoch->total};
  } else if (cf.total && announced_epoch_ && cf.role != field_role::global) {
    e = announced_epoch_;
  }
  const std::uint64_t g = globalize(cf, e, *t, rolled, epoch, epochs);
  if (prev && cf.value > *prev) {
    const std::uint64_t stride = cf.value - *prev;
    t->steady = stride == t->stride && moved ? static_cast<std::uint8_t>(t->steady + 1)
                                             : static_cast<std::uint8_t>(moved ? 1 : 0);
    t->stride = stride;
  } else if (prev && cf.value != *prev) {
    t->steady = 0;
  }
  t->last_value = cf.value;
  t->last_total = cf.total;

  const std::string field_desc =
      why ? fmt::format("field #{} {}'{}'{}", cf.index, cf.key.empty() ? "" : "named ", cf.key,
                        c.epoch ? fmt::format(" with epoch field #{}", c.epoch->index) : "")
          : std::string();
  if (eval && (!last_step_ || g <= *last_step_) && new_steps_ > 0)
    return eval_result(g, "evaluation results at the run's step");
  // A line of another template than the run's steps, with values for evaluation, at (or just
  // ahead of) the run's step: nanoGPT's "step 250: train loss 1.96, val loss 2.06" beside its
  // "iter 250: loss ..." lines.
  if ((f.eval_tag || f.eval_values) && !f.notice && last_step_ && primary_ != f.template_hash &&
      g <= *last_step_ + 2 * std::max<std::uint64_t>(last_gap_, 1)) {
    return eval_result(g, "evaluation results beside the run's steps");
  }

  // A counter beside the epoch ("91300 iter, 7 epoch / 20 epochs"), or the global one beside
  // the loop's own ("--> STEP: 49/377 -- GLOBAL_STEP: 370050"), heads its metrics.
  bool beside = c.score >= 60 && c.epoch != nullptr;
  for (std::size_t i = 0; i < f.count && c.score >= 100 && !beside; ++i)
    beside = &f.fields[i] != c.counter && f.fields[i].role == field_role::step;
  const bool evidence = !f.notice && ((c.score >= 40 && f.metric_values) || step_row(f, cf) ||
                                      beside || cf.place == field_place::bar);
  const bool behaved = !f.notice && t->steady >= 2;
  if (!t->adopted && !evidence && !behaved) {
    if (why) {
      *why = fmt::format(
          "{} could be a counter; not taken yet (no training values on the line, "
          "{} steady advance{})",
          field_desc, t->steady, t->steady == 1 ? "" : "s");
    }
    return false;
  }

  // Held to the run: once steps are under way, a counter of another template must repeat the
  // run's step, follow it, or go back a little.
  if (!follows_run(f.template_hash, g, c.score >= 60 && cf.place != field_place::bar)) {
    const std::uint64_t last = *last_step_;
    bool fits = false;
    if (t->deferred_since && *t->deferred_since == new_steps_ && prev && cf.value > *prev) {
      fits = true;  // nothing else has advanced since: this is the run's counter now
    }
    if (!fits) {
      t->deferred_since = new_steps_;
      if (why) {
        *why = fmt::format("{} reads {}, which does not follow the run's step {}: held back",
                           field_desc, g, last);
      }
      return false;
    }
  }
  t->adopted = true;
  m.kind = line_kind::step;
  m.step = g;
  m.total = cf.total;
  m.bar = cf.place == field_place::bar;
  m.epoch = epoch;
  m.epochs = epochs;
  m.epoch_rollover = rolled;
  m.format = "learnt";
  m.metrics_text = message;
  if (!t->style) t->style = style_of(message);  // a template prints its metrics one way
  m.style = *t->style;
  if (why) {
    const char* how = t->lines > 1 && !evidence ? "it advanced steadily while the values changed"
                      : step_row(f, cf)         ? "a row that names the step"
                      : c.score >= 100          ? "named as the global step"
                      : c.score >= 60           ? "named as a step counter"
                      : c.score >= 50           ? "a counter beside the epoch"
                                                : "where counters stand";
    *why = fmt::format("learnt counter: {} ({}{}){}", field_desc, how,
                       f.metric_values ? ", training values on the line" : "",
                       rolled ? "; a new epoch: the count goes on" : "");
  }
  return true;
}

bool counter_learner::follows_run(std::uint64_t template_hash, std::uint64_t g, bool named) const {
  if (!last_step_ || primary_ == template_hash || resume_pending_) return true;
  const std::uint64_t last = *last_step_;
  if (g >= last) {
    if (g <= 4 * last + 100 || last == 0) return true;
    // Samples: a whole multiple of the step by a batch-like factor (8, 16, 64, 96, ...).
    const std::uint64_t ratio = g / last;
    return !(g % last == 0 && ratio >= 8 && ratio % 8 == 0);
  }
  return g * 2 >= last || named;
}

void counter_learner::note_header(std::string_view message) {
  std::size_t i = 0;
  while (i < message.size() && is_space(message[i]))
    ++i;
  std::size_t e = i;
  while (e < message.size() && !is_space(message[e]))
    ++e;
  // A header has several columns, of names only.
  std::size_t words = 0;
  for (std::size_t k = 0; k < message.size(); ++k) {
    if (!is_space(message[k]) && (k == 0 || is_space(message[k - 1]))) ++words;
  }
  if (words < 3) return;
  std::string column(message.substr(i, e - i));
  column += " 1";
  line_fields f;
  read_fields(column, f);
  // Only a counter's name is kept (a header of other names changes nothing), so that lines the
  // prefilter skips could not have changed it.
  if (f.count == 1 && f.fields[0].role != field_role::none) first_column_ = f.fields[0].role;
}

void counter_learner::on_new_step(std::uint64_t step, std::uint64_t gap,
                                  std::optional<std::uint64_t> template_hash) {
  if (gap == 0) return;
  ++new_steps_;
  last_step_ = step;
  last_gap_ = gap;
  primary_ = template_hash;
}

}  // namespace joules::steps
