#include "steps/counter_learner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "steps/field_words.hpp"
#include "steps/scan.hpp"

namespace joules::steps {
namespace {

// Whether the word before the line's first epoch says the epoch begins: "Starting Epoch 17:",
// "Start epoch 0", "Beginning epoch 3".
bool starts_epoch(std::string_view message, const line_fields& f) {
  for (std::size_t i = 0; i < f.count; ++i) {
    const field& x = f.fields[i];
    if (x.role != field_role::epoch || x.key.empty()) continue;
    std::size_t e = static_cast<std::size_t>(x.key.data() - message.data());
    while (e > 0 && is_space(message[e - 1]))
      --e;
    std::size_t b = e;
    while (b > 0 && is_alpha(message[b - 1]))
      --b;
    const std::string_view w = message.substr(b, e - b);
    return eq_ci(w, "starting") || eq_ci(w, "start") || eq_ci(w, "begin") ||
           eq_ci(w, "beginning") || eq_ci(w, "begins");
  }
  return false;
}

// "step", "steps", "Step:": the name of optimizer steps where a line also counts iterations.
bool is_step_word(std::string_view key) {
  const std::string_view k = trim_key(key);
  return eq_ci(k, "step") || eq_ci(k, "steps");
}

// A line that is only a named step counter over its total: "[step=3/739328]" (OLMo),
// "[batch=2/3]:" (Composer), whose values follow on the lines after it.
// Also a step counter alone on its line over its total after words that describe it ("Learning
// iteration 66/30000" heading rsl_rl's block of values), or without its total and without words
// ("Iteration: 0" heading DeepRM's): not the global step, nor a count after words ("Total steps:
// 1608"), which such blocks report among their values.
bool progress_header(std::string_view message, const field& c) {
  if ((c.role != field_role::step && c.role != field_role::global) || c.not_training ||
      c.key.empty() || (c.total && c.value > *c.total)) {
    return false;
  }
  auto mark = [](char ch) { return is_space(ch) || ch == '[' || ch == ']' || ch == ':'; };
  const auto key_at = static_cast<std::size_t>(c.key.data() - message.data());
  bool words = false;
  for (std::size_t i = 0; i < key_at; ++i) {
    if (is_alpha(message[i])) {
      words = true;
    } else if (!mark(message[i])) {
      return false;
    }
  }
  // Words before a count without its total describe a quantity ("Total steps: 1608").
  if ((words || !c.total) && (c.role != field_role::step || (words && !c.total))) return false;
  std::size_t e = c.pos;
  while (e < message.size() && (is_digit(message[e]) || message[e] == '/' || is_space(message[e])))
    ++e;
  for (; e < message.size(); ++e) {
    if (!mark(message[e])) return false;
  }
  return true;
}

// How much a field looks like the step counter on its own; 0 or less: not a candidate.
int score_of(const field& f, std::string_view message) {
  if (f.not_training) return -1;
  switch (f.role) {
    case field_role::global:
      return 100;
    case field_role::step:
      if (f.place == field_place::after_epoch) return 50;
      // "Episode 00057075 Frame 00000199 ... Reward: 30" (an RL agent's episodes): the loop's
      // count where nothing finer is named, but not named as a step counter (it is held to the
      // run as an unnamed counter is, and yields to a named step or a leading count).
      // "mean 100 episode reward" names no counter.
      if (eq_ci(trim_key(f.key), "episode")) return f.key.data() > message.data() + f.pos ? -1 : 55;
      return f.total ? 65 : 60;
    case field_role::epoch:
    case field_role::samples:
      return -1;
    case field_role::none:
      break;
  }
  if (f.place == field_place::bar) return 50;
  // "i = 822990 / 973300" (torch-rnn): progress over a total, under a name that is no quantity.
  if (!f.key.empty() && f.total && *f.total >= f.value && *f.total > 0 &&
      class_of_word(trim_key(f.key)) == word_class::none)
    return 45;
  if (!f.key.empty()) return 0;  // named, but not as a counter: a loss, a layer, a port
  // "[  50/1251 (  4%)]", "[1][ 50/1000]": a count over a total in brackets is progress.
  if (f.place == field_place::bracket && f.total) return 45;
  // "[0]\ttest-auc:0.89" (XGBoost, LightGBM): a counter in brackets that opens the message.
  if (f.place == field_place::bracket && f.pos <= 4 && !message.empty() &&
      (message[0] == '[' || message[0] == '('))
    return 45;
  // "145: 4.54, 7.31 avg loss" (darknet), "0:\tlearn: 0.65" (CatBoost), "3 7.34 s run".  A
  // count over its total that opens the message ("39160/50000: episode: 569, ..., episode steps:
  // 13", keras-rl) is the loop's progress, over a step count named for something inside it.
  if (f.place == field_place::leading) return f.total && f.value <= *f.total ? 61 : 40;
  return 0;
}

// Rows that name the step and nothing else: RLlib's "training_iteration: 84", Stable-Baselines3's
// "|    iterations           | 18        |" and "|    n_updates   | 99   |", Stable-Baselines'
// "| steps                   | 1841     |".  A configuration printed as YAML names counts too
// ("num_sgd_iter: 30"): only a table's rows name others than the training iteration.
bool step_row(const line_fields& f, const field& c) {
  // "| episodes | 100 |" beside "| steps | 1841 |" (Stable-Baselines' DQN): episodes are the
  // loop's count only where nothing finer is named.
  if (!f.record_row || starts_with_ci(trim_key(c.key), "episode")) return false;
  if (eq_ci(c.key, "training_iteration") || eq_ci(c.key, "iterations")) return true;
  return f.table_row && (c.role == field_role::step || c.role == field_role::global);
}

// Metrics as "key: value" or as "key value", whichever reads more (steps/metrics.hpp).
metric_style style_of(std::string_view message) {
  std::vector<metric> kv;
  std::vector<metric> spaced;
  scan_metrics(message, metric_style::kv, kv);
  scan_metrics(message, metric_style::spaced, spaced);
  return spaced.size() > kv.size() ? metric_style::spaced : metric_style::kv;
}

// Whether the message names its training loss before any evaluation ("Epoch: 001, Loss: 1.9451,
// Train: 0.2071, Val: 0.2040"), not a loss of the evaluation it reports ("| epoch 004 | valid on
// 'valid' subset  1000 / 1311 loss=3.24").
bool loss_before_eval(std::string_view message) {
  const std::size_t loss = find_ci(message, "loss");
  if (loss == std::string_view::npos) return false;
  for (const std::string_view w : {"val", "test", "eval", "dev"}) {
    if (find_ci(message, w) < loss) return false;
  }
  return true;
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
  // "Epoch 1 | iter 4 step 1 | loss train: 10.97": with gradient accumulation the iterations
  // count micro-batches and the steps count optimizer steps, the run's steps.
  if (c.counter != nullptr && c.counter->role == field_role::step &&
      !is_step_word(c.counter->key)) {
    for (std::size_t i = 0; i < f.count; ++i) {
      const field& x = f.fields[i];
      if (&x != c.counter && x.role == field_role::step && is_step_word(x.key) &&
          x.value <= c.counter->value && score_of(x, message) >= c.score) {
        c.counter = &x;
        break;
      }
    }
  }
  // "Loss=0.136 Batch_id=468 Accuracy=87.57: 100%|██████████| 469/469 [00:20<00:00, 22.70it/s]":
  // a bar counts its own loop, which the description's batch index only echoes.
  if (c.counter != nullptr && c.counter->role == field_role::step && !c.counter->total) {
    for (std::size_t i = 0; i < f.count; ++i) {
      const field& x = f.fields[i];
      if (x.place == field_place::bar && x.role == field_role::step && !x.not_training) {
        c.counter = &x;
        c.score = score_of(x, message);
      }
    }
  }
  t.chosen = true;
  t.counter = c.counter != nullptr ? c.counter->index : kNoField;
  t.epoch = c.epoch != nullptr ? c.epoch->index : kNoField;
  return c;
}

std::optional<counter_learner::epoch_seen> counter_learner::announced(std::string_view message,
                                                                      const line_fields& f) {
  for (std::size_t i = 0; i < f.count; ++i) {
    const field& x = f.fields[i];
    if (x.role != field_role::epoch || x.key.empty() || x.place == field_place::bar) continue;
    // Nothing after the epoch but a colon or dots ("Epoch 2/5", "EPOCH: 0", "Epoch 3:",
    // tensorpack's "Start Epoch 16 ...").
    std::size_t end = x.pos;
    while (end < message.size() &&
           (is_digit(message[end]) || message[end] == '/' || message[end] == ' ' ||
            message[end] == ':' || message[end] == '.'))
      ++end;
    if (end != message.size()) continue;
    // Nothing before its name but a bar at 0 that the notebook kept on the same line, or a word
    // saying the epoch starts ("Start Epoch 16 ...").
    const auto key_at = static_cast<std::size_t>(x.key.data() - message.data());
    std::size_t b = key_at;
    while (b > 0 && is_space(message[b - 1]))
      --b;
    std::size_t w = b;
    while (w > 0 && is_alpha(message[w - 1]))
      --w;
    if (b == 0 ||
        (message[b - 1] == ']' && i > 0 && f.fields[i - 1].place == field_place::bar &&
         f.fields[i - 1].value == 0) ||
        (w == 0 && starts_epoch(message, f))) {
      return epoch_seen{x.value, x.total};
    }
  }
  return std::nullopt;
}

bool counter_learner::epoch_is_step(std::string_view message, const line_fields& f,
                                    const template_state& t, bool eval, bool announcement,
                                    bool row_values) const {
  // A line of an epoch's training values may carry its evaluation's too (PyG's "Epoch: 001,
  // Loss: 1.9451, Train: 0.2071, Val: 0.2040, Test: 0.2100").
  if (finer_steps_ > 0 || f.notice || (eval && (!loss_before_eval(message)))) return false;
  // An epoch under way is not one done: "EPOCH 2 - PROGRESS: at 4.18% examples" (Gensim) comes
  // before the line that ends epoch 2.
  if (contains_ci(message, "progress") && message.find('%') != std::string_view::npos &&
      message.find("100%") == std::string_view::npos) {
    return false;
  }
  // "Starting Epoch 17: learning rate per sample = 0.000047" announces an epoch with its
  // settings: no training has been done in it.
  if (starts_epoch(message, f)) return false;
  if (t.epoch_step || row_values) return true;
  // A line of training values for the epoch, headed by it: RecBole's "epoch 0 training [time:
  // 1.88s, train loss: 157.24]", "Epoch 1, training: loss: 0.54" (torch for R).  Not a record
  // with an epoch among its values (DeiT's log.txt: {"train_loss": 3.2, "epoch": 249, ...}),
  // which a trainer writes beside its step lines.
  // Any quantity counts on a line that does not speak of evaluation: the TensorFlow examples'
  // "Epoch: 0001 cost= 0.510", "epoch: 3 reward: 0.51", "epoch 2 mse 0.4" (not MST's "Epoch 162:
  // testing psnr = 34.40").
  // So do values under names of the trainer's own ("Epoch: 3 D: 0.51 G: 0.82", "epoch: 7
  // elbo: -120.5"), after an epoch named as one ("epochs: 10, dropout: 0.5" is a setting).
  const bool quantities =
      f.metric_values || (f.named_values && f.count > 0 && !f.fields[0].key.empty() &&
                          (f.fields[0].key.back() | 0x20) != 's');
  if (quantities && (f.train_values || !f.eval_word) && f.count > 0 &&
      f.fields[0].role == field_role::epoch && f.fields[0].pos <= 16)
    return true;
  // An epoch announced again with no step since it was last announced: nnU-Net's "epoch:  7".
  return announcement && t.lines > 1 && t.steps_at_last == new_steps_ &&
         new_steps_ == t.new_steps_before;
}

bool counter_learner::observe(std::string_view message, const line_fields& fields,
                              std::uint64_t line, match& m, std::string* why) {
  // Rows under a table header: the numbers that open a row are named by its columns.
  line_fields named;
  const bool under_header = name_columns(message, fields, named);
  const line_fields& f = under_header ? named : fields;
  if (f.resume) resume_pending_ = true;
  // Only templates with a candidate counter (or an epoch) are remembered: most lines of a log
  // have numbers and none of them counts steps.
  template_state scratch;
  scratch.new_steps_before = new_steps_;
  template_state* t = &scratch;
  const auto it = templates_.find(f.template_hash);
  if (it != templates_.end()) t = &it->second;
  // The first row under a table's header printed again starts that table's count afresh: a
  // counter lower than the last table's is a new run, not a next epoch.
  if (under_header && column_end_ != 0 && column_new_table_) {
    column_new_table_ = false;
    t->last_value.reset();
    t->last_total.reset();
    t->epoch_sum = 0;
    t->stride = 0;
  }
  ++t->lines;
  const bool moved = t->lines > 1 && f.value_hash != t->value_hash;
  t->value_hash = f.value_hash;

  const choice c = choose(message, f, *t);
  // A fraction under a name that is no counter, on a line of evaluation, is that loop's progress
  // (fairseq's "valid on 'valid' subset  1000 / 1311 loss=3.24").
  const bool candidate =
      c.counter != nullptr && c.score > 0 &&
      !(f.eval_tag && c.counter->role == field_role::none && !c.counter->key.empty());
  if (it == templates_.end() && (candidate || c.epoch != nullptr) &&
      templates_.size() < kMaxTemplates) {
    t = &templates_.emplace(f.template_hash, scratch).first->second;
  }
  const std::uint64_t seen_line = t->last_line;
  const std::uint64_t steps_then = t->steps_at_last;
  t->last_line = line;
  t->steps_at_last = new_steps_;

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
    if (why) {
      *why = fmt::format("{} ({})", reason,
                         f.eval_tag ? "tagged as evaluation" : "values named for evaluation");
    }
    return true;
  };

  const auto a = announced(message, f);
  if (a) announced_epoch_ = a;
  if (c.epoch != nullptr) {
    // An epoch lower than the last one begins a new run ("Epoch: 0, Loss: 2.16" after "Epoch
    // 02, Loss: 2.19" in a log of two programs).  If its first two epoch lines come with nothing
    // finer than an epoch counted before or between them, the new run counts its epochs,
    // whatever the old one counted.  (One line is not enough: a trainer may print the epoch
    // before the steps in it.)
    const bool quiet = finer_steps_ == finer_at_epoch_;
    if (!quiet) {
      run_epochs_ = 0;
    } else if (last_epoch_ && c.epoch->value < *last_epoch_) {
      run_epochs_ = 1;
    } else if (run_epochs_ > 0 && last_epoch_ && c.epoch->value > *last_epoch_ &&
               ++run_epochs_ == 2) {
      finer_steps_ = 0;
    }
    last_epoch_ = c.epoch->value;
    finer_at_epoch_ = finer_steps_;
  }
  const field* cp = candidate ? c.counter : nullptr;
  bool epoch_counter = false;
  if (cp == nullptr && c.epoch != nullptr) {
    template_state probe = *t;
    probe.steps_at_last = steps_then;
    const bool row_values =
        under_header && header_values_ && f.float_values && f.fields[0].role == field_role::epoch;
    epoch_counter = epoch_is_step(message, f, probe, eval, a.has_value(), row_values);
    if (epoch_counter) cp = c.epoch;
  }
  if (cp == nullptr) {
    if (eval && new_steps_ > 0) {
      return eval_result(0, c.epoch != nullptr ? "evaluation results, with an epoch"
                                               : "evaluation results, no step counter");
    }
    if (why) {
      *why = c.counter == nullptr ? (c.epoch != nullptr ? "an epoch, and the log counts steps"
                                                        : "no field that counts steps")
                                  : fmt::format("field #{} ('{}') is not a step counter",
                                                c.counter->index, c.counter->key);
    }
    return false;
  }

  const field& cf = *cp;
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
  // beside the training bar), unless it starts again on a line of training values that speaks
  // of no evaluation, or names its training loss before any evaluation's: a new run with another
  // length ("Step 10/2000, loss: 2.3" after "Step 900/1000, loss: 1.1" in the log of two runs).
  // A step counter that had reached its total starts again: that loop ended, and this is a new
  // one even without values on the line ("Step 10/200" after "Step 100/100").
  const bool finished = t->last_value && t->last_total && *t->last_value >= *t->last_total;
  // One that goes on past where it was towards a larger total, on a line that speaks of no
  // evaluation, is the same loop with a longer schedule (a run resumed for more steps, a total
  // the trainer revised); Keras' "313/313" of an evaluation after "100/1875" is not.
  const bool goes_on = !f.eval_word && !f.notice && cf.place != field_place::bar && t->last_value &&
                       cf.value > *t->last_value && cf.total && t->last_total &&
                       *cf.total > *t->last_total && cf.value <= *cf.total &&
                       (c.score >= 60 || f.metric_values || f.named_values);
  const bool restarted_run =
      (!f.eval_word || loss_before_eval(message)) && !f.notice && cf.place != field_place::bar &&
      t->last_value && cf.value < *t->last_value &&
      ((c.score >= 45 && f.metric_values) || (c.score >= 60 && (f.named_values || finished)));
  if (cf.total && t->adopted && t->last_total && *cf.total != *t->last_total && !epoch_counter &&
      !restarted_run && !goes_on) {
    if (why) {
      *why = fmt::format("counts to {}, not {}: another loop ({})", *cf.total, *t->last_total,
                         !t->last_value || cf.value >= *t->last_value ? "it goes on, not back"
                         : f.eval_word && !loss_before_eval(message)
                             ? "it went back on a line of evaluation"
                             : "it went back on a line without training values");
    }
    return false;
  }
  // Another row of a table whose row counter is known counts something else.  A count of
  // updates ("n_updates", which PPO raises by its epochs each iteration) is the step only in a
  // table that names no iteration: from its second table on, none having named one since.
  const bool row = step_row(f, cf);
  const bool update_row = row && starts_with_ci(cf.key, "n_");
  if (row && row_counter_ && *row_counter_ != f.template_hash &&
      (update_row || !row_counter_is_update_)) {
    if (why) *why = "another row of the table that counts the steps";
    return false;
  }
  if (update_row && !row_counter_ && t->lines < 2) {
    if (why) *why = "a count of updates: the step if no row names an iteration";
    return false;
  }
  const std::optional<std::uint64_t> prev = t->last_value;
  std::optional<epoch_seen> e;
  if (epoch_counter) {
    // The epoch as printed is the step.
  } else if (c.epoch != nullptr) {
    e = epoch_seen{c.epoch->value, c.epoch->total};
  } else if (cf.total && announced_epoch_ && cf.role != field_role::global) {
    e = announced_epoch_;
  }
  global_step gs;
  if (epoch_counter) {
    gs.step = cf.value;
  } else {
    gs = globalize(cf, e, *t, seen_line != 0 && line > seen_line + 1);
  }
  const std::uint64_t g = gs.step;
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
                        c.epoch && !epoch_counter
                            ? fmt::format(" with epoch field #{}", c.epoch->index)
                            : "")
          : std::string();
  if (eval && (!last_step_ || g <= *last_step_) && new_steps_ > 0)
    return eval_result(g, "evaluation results at the run's step");
  // A line of another template than the run's steps, with values for evaluation, at (or just
  // ahead of) the run's step: nanoGPT's "step 250: train loss 1.96, val loss 2.06" beside its
  // "iter 250: ..." lines.
  // Not far behind it (a new run of the log, whose epoch 1 reports its evaluation too), and
  // for an epoch taken as the step, not past it: that is the next step, with its evaluation's
  // values.
  const std::uint64_t stride2 = 2 * std::max<std::uint64_t>(last_gap_, 1);
  if ((f.eval_tag || f.eval_values) && !f.notice && last_step_ && primary_ != f.template_hash &&
      (g >= *last_step_ || *last_step_ - g <= stride2) &&
      g <= *last_step_ + (epoch_counter ? 0 : stride2)) {
    return eval_result(g, "evaluation results beside the run's steps");
  }

  // A counter beside the epoch ("91300 iter, 7 epoch / 20 epochs"), or the global one beside
  // the loop's own ("--> STEP: 49/377 -- GLOBAL_STEP: 370050"), heads its metrics.
  bool beside = c.score >= 60 && c.epoch != nullptr;
  for (std::size_t i = 0; i < f.count && c.score >= 100 && !beside; ++i)
    beside = &f.fields[i] != c.counter && f.fields[i].role == field_role::step;
  // Values under names of the trainer's own ("Iter 40/1000 D: 0.51 G: 0.82", "[40] elbo:
  // -120.5") count beside a counter named as a step counter or in the bracket opening the line,
  // not beside a bare number opening it nor a fraction under another name ("Inference done
  // 11/5000. Dataloading: 0.0008 s/iter").
  const bool named_or_opening =
      c.score >= 60 || (cf.place == field_place::bracket && cf.key.empty() && cf.pos <= 4 &&
                        (message.front() == '[' || message.front() == '('));
  const bool evidence =
      !f.notice && ((c.score >= 40 && f.metric_values) || (f.named_values && named_or_opening) ||
                    step_row(f, cf) || beside || cf.place == field_place::bar || under_header ||
                    epoch_counter || progress_header(message, cf));
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
  // run's step, follow it, or go back a little.  Not a counter named as the global step
  // (tensorpack's "Epoch 16 (global_step 8000) finished" after its epoch's bar): the trainer
  // says what the run's step is.
  const bool named_global = cf.role == field_role::global && !f.record_row && !cf.not_training;
  // An epoch taken as the step (a line of the epoch's training values, while nothing finer
  // counts) that goes back starts the run again, as a counter named as a step counter does: a
  // later run of the log.
  if (!named_global &&
      !follows_run(
          f.template_hash, g,
          (c.score >= 60 && cf.place != field_place::bar) || epoch_counter ||
              (cf.total && f.metric_values && cf.value <= *cf.total &&
               (cf.place == field_place::after_epoch || cf.place == field_place::leading)))) {
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
  t->epoch_step = epoch_counter;
  if (row && (!row_counter_ || (row_counter_is_update_ && !update_row))) {
    row_counter_ = f.template_hash;
    row_counter_is_update_ = update_row;
  }
  m.kind = line_kind::step;
  m.step = g;
  m.total = gs.total;
  m.bar = cf.place == field_place::bar;
  m.epoch = gs.epoch;
  m.epochs = gs.epochs;
  m.epoch_rollover = gs.rolled;
  m.format = "learnt";
  m.metrics_text = message;
  if (!t->style) t->style = style_of(message);  // a template prints its metrics one way
  m.style = *t->style;
  if (why) {
    const char* how = epoch_counter               ? "the epoch: the log counts nothing finer"
                      : t->lines > 1 && !evidence ? "it advanced steadily while the values changed"
                      : step_row(f, cf)           ? "a row that names the step"
                      : under_header              ? "a row under a header that names it"
                      : cf.place == field_place::leading && cf.total
                          ? "a count over its total opening the line"
                      : c.score >= 100 ? "named as the global step"
                      : c.score >= 60  ? "named as a step counter"
                      : c.score >= 50  ? "a counter beside the epoch or a bar's count"
                                       : "where counters stand";
    *why = fmt::format("learnt counter: {} ({}{}){}", field_desc, how,
                       f.metric_values  ? ", training values on the line"
                       : f.named_values ? ", named values on the line"
                                        : "",
                       gs.rolled ? "; a new epoch: the count goes on" : "");
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

void counter_learner::on_new_step(std::uint64_t step, std::uint64_t gap,
                                  std::optional<std::uint64_t> template_hash) {
  if (gap == 0) return;
  ++new_steps_;
  last_step_ = step;
  last_gap_ = gap;
  primary_ = template_hash;
  const auto it = template_hash ? templates_.find(*template_hash) : templates_.end();
  if (it == templates_.end() || !it->second.epoch_step) ++finer_steps_;
  if (it != templates_.end()) it->second.steps_at_last = new_steps_;
}

}  // namespace joules::steps
