// The parser's state machine: which format a line is in (steps/formats_*.cpp, or a counter the
// general mechanism learnt, steps/counter_learner.hpp), and what it means given the lines before
// it: a new step or a repeat, how many steps since the last step line, whether the counter
// restarted, whether a phase starts or was already announced.

#include "steps/step_parser.hpp"

#include <fmt/format.h>

#include "steps/counter_learner.hpp"
#include "steps/custom_format.hpp"
#include "steps/fields.hpp"
#include "steps/formats.hpp"
#include "steps/line_prefix.hpp"
#include "steps/prefilter.hpp"
#include "steps/scan.hpp"

namespace joules::steps {

std::string_view to_string(line_kind k) {
  switch (k) {
    case line_kind::none:
      return "none";
    case line_kind::step:
      return "step";
    case line_kind::phase_begin:
      return "phase_begin";
    case line_kind::phase_end:
      return "phase_end";
  }
  return "none";
}

struct step_parser::state {
  format_state formats;
  metric_namer names;
  std::string scratch;
  std::optional<std::uint64_t> last_step;  // the last new step, as reported
  std::optional<std::uint64_t> last_total;
  // Per-epoch counters whose epoch is not printed: the batches of the epochs before this one.
  std::uint64_t epoch_base = 0;
  std::uint64_t epochs_counted = 0;         // restarts of such a counter
  std::optional<std::uint64_t> epochs;      // the number of epochs, once the log has said it
  std::optional<std::uint64_t> last_batch;  // the last per-epoch counter, as printed
  std::uint64_t last_batch_total = 0;
  std::uint64_t last_batch_line = 0;  // the line (rewrite) it was drawn on
  std::uint64_t last_batch_desc = 0;  // a hash of its description
  std::optional<std::uint64_t> last_epoch;
  std::string_view last_format;
  // The phase of the last phase_end with no step or phase start since: a second end of the same
  // phase ("Configuration saved in ...", "Model weights saved in ...") is not another boundary.
  std::string_view ended_phase;
  counter_learner learner;
  line_fields fields;  // the fields of the message at hand, reused
};

step_parser::step_parser(std::vector<std::string> custom, bool prefilter)
    : step_parser(parser_options{std::move(custom), prefilter, rule_set::all()}) {}

step_parser::step_parser(parser_options options)
    : custom_(options.custom.empty() ? nullptr : std::make_unique<custom_formats>(options.custom)),
      state_(std::make_unique<state>()),
      prefilter_(options.prefilter),
      rules_(options.rules) {}

step_parser::~step_parser() = default;
step_parser::step_parser(step_parser&&) noexcept = default;
step_parser& step_parser::operator=(step_parser&&) noexcept = default;

namespace {

// The loss printed on an evaluation result line ("valid on 'valid' subset | loss 4.2") is the
// validation loss.
void name_eval_loss(std::vector<metric>& metrics) {
  metric* loss = nullptr;
  for (auto& m : metrics) {
    if (m.name == "val_loss") return;
    if (m.name == "loss") loss = &m;
  }
  if (loss != nullptr) loss->name = "val_loss";
}

bool has_digit(std::string_view s) {
  for (const char c : s) {
    if (is_digit(c)) return true;
  }
  return false;
}

// Built-in formats, cheapest and most specific first.  A rule that is off (steps/rules.hpp)
// leaves the line, and what its matcher remembers, as if it had not matched.
bool match_builtin(std::string_view body, format_state& st, match& m, const rule_set& rules) {
  if (!has_digit(body)) return match_phase(body, m);
  const bool all = rules.all_enabled();
  format_state saved;
  if (!all) saved = st;
  // The generic rule is tried later, with the line's fields (step_parser::parse_segment).
  bool found = match_bar(body, st, m) || match_llm(body, st, m) || match_other(body, st, m) ||
               match_phase(body, m);
  if (found && !all) {
    if (const auto r = rule_of_format(m.format); r && !rules.enabled(*r)) {
      st = saved;
      m = match{};
      found = false;
    }
  }
  // A configuration printed at the start (a line of no format, or a dict) may say the epochs.
  if (m.kind == line_kind::none && !m.epochs) m.epochs = stated_epochs(body);
  return found;
}

// A bar's description, the text before its percentage, as a hash.
std::uint64_t description_hash(std::string_view text) {
  const std::size_t pct = text.find("%|");
  std::uint64_t h = 1469598103934665603ULL;
  for (const char c : text.substr(0, pct == std::string_view::npos ? 0 : pct))
    h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h;
}

void add_missing(std::vector<metric>& into, const std::vector<metric>& from) {
  for (const auto& m : from) {
    bool have = false;
    for (const auto& x : into)
      have = have || x.name == m.name;
    if (!have) into.push_back(m);
  }
}

}  // namespace

parsed_line step_parser::parse(std::string_view line) {
  return parse_line(line, nullptr);
}

parsed_line step_parser::parse(std::string_view line, std::string& why) {
  why.clear();
  return parse_line(line, &why);
}

parsed_line step_parser::parse_line(std::string_view line, std::string* why) {
  if (line.find('\r') == std::string_view::npos) return parse_segment(line, why);
  // Every rewrite in turn, as wrap reads them (its line splitter ends a line at a lone \r).
  std::optional<parsed_line> step;
  std::optional<parsed_line> event;
  std::optional<parsed_line> other;
  std::uint64_t gap = 0;
  bool restarted = false;
  std::vector<metric> metrics;
  std::string segment_why;
  std::string step_why;
  std::string event_why;
  std::string other_why;
  std::size_t segments = 0;
  for (std::size_t begin = 0;;) {
    const std::size_t cr = line.find('\r', begin);
    const std::string_view seg =
        line.substr(begin, cr == std::string_view::npos ? std::string_view::npos : cr - begin);
    if (!blank(seg)) {
      ++segments;
      parsed_line p = parse_segment(seg, why ? &segment_why : nullptr);
      add_missing(metrics, p.metrics);
      if (p.kind == line_kind::step && p.step_gap > 0) {
        gap += p.step_gap;
        restarted = restarted || p.counter_restarted;
        step = std::move(p);
        if (why) step_why = segment_why;
      } else if (p.kind == line_kind::phase_begin || p.kind == line_kind::phase_end) {
        event = std::move(p);
        if (why) event_why = segment_why;
      } else if (p.kind == line_kind::step || !p.format.empty() || !other) {
        other = std::move(p);
        if (why) other_why = segment_why;
      }
    }
    if (cr == std::string_view::npos) break;
    begin = cr + 1;
  }
  parsed_line out;
  std::string* chosen = &other_why;
  if (step) {
    out = std::move(*step);
    out.step_gap = gap;
    out.counter_restarted = restarted;
    chosen = &step_why;
  } else if (event) {
    out = std::move(*event);
    chosen = &event_why;
  } else if (other) {
    out = std::move(*other);
  }
  add_missing(out.metrics, metrics);
  out.epochs = state_->epochs;
  if (why) *why = fmt::format("{} ({} rewrites on the line)", *chosen, segments);
  return out;
}

parsed_line step_parser::parse_segment(std::string_view line, std::string* why) {
  state& s = *state_;
  parsed_line out;
  out.epochs = s.epochs;
  ++s.formats.lines;
  // Most lines of a log are not steps: rejected in one pass over their bytes.  Not while the
  // metric lines of an OLMo or Composer header may follow (any indented "key: value"), nor the
  // rows of numbers under a header whose counter column is further right (Vowpal Wabbit's).
  const bool related = may_be_step_related(line) || s.learner.column_counter();
  if (prefilter_ && !custom_ && s.formats.metric_block.empty() && !related) {
    if (why) *why = "no step word, leading number, fraction, bar or dict: not read further";
    return out;
  }
  const std::string_view text = visible_text(line, s.scratch);
  match m;
  bool found = false;
  std::optional<std::uint64_t> templ;  // the line's template, when the learner held it to the run
  if (custom_) {
    if (const auto c = custom_->find(text)) {
      m.kind = line_kind::step;
      m.step = c->step;
      m.total = c->total;
      m.format = "custom";
      m.metrics_text = text;
      found = true;
      if (why) *why = "--step-regex";
    }
  }
  if (!found) {
    const std::string_view body = strip_prefixes(text);
    if (body.empty()) {
      if (why) *why = "empty";
      return out;
    }
    // Metric lines after an OLMo or Composer step header belong to that step.
    const std::string_view block = s.formats.metric_block;
    s.formats.metric_block = {};
    found = match_builtin(body, s.formats, m, rules_);
    const bool digits = !found && has_digit(body);
    // Only a line that may hold a counter is read into its template and fields.
    // Nor a line the prefilter would pass over (a counter behind a prefix it does not see
    // through, "INFO 80112  grad_norm: 30.12"): the learnt counters and the generic rule read
    // the same lines with and without it.
    const bool counts =
        digits && related && (may_hold_counter(body, s.fields) || s.learner.column_counter());
    if (counts) read_fields(body, s.fields);
    // The generic rule takes any "iter N" beside a loss.  It leaves to the learnt counters a line
    // with an epoch or a global counter beside (the step is then global: "epoch: 36/300, iter:
    // 1040/1849", "Step: 5, Global_Step: 105"), and is held to the run like a learnt counter,
    // so that a count of samples beside the real step line (TFLearn's "iter: 00512/55000") is
    // not another step.
    if (counts && rules_.enabled(rule::generic)) {
      bool epoch = false;
      bool global = false;
      bool local = false;
      for (std::size_t i = 0; i < s.fields.count; ++i) {
        const field_role r = s.fields.fields[i].role;
        epoch = epoch || r == field_role::epoch;
        global = global || r == field_role::global;
        local = local || r == field_role::step;
      }
      // So is a line after an epoch announced on a line of its own ("Epoch 2/3" before "Step
      // 100/500 - loss: 2.01"): its counter may count that epoch's batches.
      const bool beside = epoch || (global && local) || s.learner.epoch_announced();
      if (!beside && match_generic(body, m, &s.names)) {
        found = true;
        templ = s.fields.template_hash;
        // The learnt counters follow the same template and make its count global: a counter that
        // goes back to where it began is a new epoch and the count goes on, one that goes back
        // elsewhere a new run.
        match learnt;
        if (m.kind == line_kind::step &&
            s.learner.observe(body, s.fields, s.formats.lines, learnt, nullptr) &&
            learnt.kind == line_kind::step) {
          m.step = learnt.step;
          m.epoch_rollover = learnt.epoch_rollover;
          m.epoch = learnt.epoch;
          m.epochs = learnt.epochs;
        }
        if (m.kind == line_kind::step && !s.learner.follows_run(*templ, m.step, /*named=*/true)) {
          m = match{};
          found = false;
        }
        if (found && why) *why = "rule generic";
      }
    }
    if (found && why) {
      *why = m.kind == line_kind::none ? fmt::format("rule {}: not training", m.format)
                                       : fmt::format("rule {}", m.format);
    }
    // They are indented, which other output after a header (a warning) is not.
    if (!found && !block.empty() && is_space(text[0]) &&
        body.find_first_of(":=") != std::string_view::npos) {
      std::string_view metrics = body;
      // Composer: "Train loss/train/total: 12.05" names the loop before the metric.
      for (const std::string_view loop : {"Train ", "Eval "}) {
        if (metrics.substr(0, loop.size()) == loop) metrics.remove_prefix(loop.size());
      }
      m.format = block;
      m.metrics_text = metrics;
      s.formats.metric_block = block;
      found = true;
      if (why) *why = fmt::format("rule {}: metrics of the step above", block);
    }
    // The general mechanism: counters of formats no rule knows.
    if (!found) {
      if (counts) {
        found = s.learner.observe(body, s.fields, s.formats.lines, m, why);
        if (found) templ = s.fields.template_hash;
        if (why) *why = fmt::format("template \"{}\": {}", template_text(body), *why);
      } else if (digits) {
        s.learner.note_header(body);  // spaCy's "E    #       LOSS TOK2VEC  LOSS NER ..."
        if (why)
          *why = fmt::format("template \"{}\": no field that counts steps", template_text(body));
      } else if (contains_ci(body, "resum") || contains_ci(body, "restor")) {
        s.learner.note_resume();
        if (why) *why = "a resume: the next counter that goes back starts again";
      } else {
        s.learner.note_header(body);
        if (why) *why = "no number and no rule matched";
      }
    }
  }
  if (m.epochs) s.epochs = out.epochs = m.epochs;
  if (!found) return out;
  out.format = m.format;
  if (!m.metrics_text.empty()) {
    out.metrics.reserve(16);  // one allocation for a typical line's metrics
    scan_metrics(m.metrics_text, m.style, out.metrics, &s.names);
  }
  if (m.kind == line_kind::phase_end && m.phase == "eval") name_eval_loss(out.metrics);

  switch (m.kind) {
    case line_kind::none:
      return out;
    case line_kind::phase_begin:
      if (m.bar) {
        s.formats.eval_bar_open = true;
        s.formats.eval_bar_at = s.formats.lines;
      }
      // A phase announced again (each update of an evaluation bar) is not a new phase.
      if (s.formats.phase == m.phase) return out;
      s.formats.phase = m.phase;
      s.ended_phase = {};
      out.kind = m.kind;
      out.phase = std::string(m.phase);
      out.step = m.step;
      return out;
    case line_kind::phase_end:
      // A progress bar at 100 % ends only the phase its updates began; or, with no phase open
      // after training steps, the evaluation that ran since (a log that kept only each bar's
      // last state, as YOLO's terminal output does).
      if (m.bar) s.formats.eval_bar_open = false;
      if ((m.format == "tqdm" || m.format == "lightning" || m.bar) && s.formats.phase != m.phase &&
          !(s.formats.phase.empty() && s.last_step && s.ended_phase != m.phase)) {
        return out;
      }
      if (s.ended_phase == m.phase && s.formats.phase != m.phase) return out;
      s.formats.phase = {};
      s.ended_phase = m.phase;
      out.kind = m.kind;
      out.phase = std::string(m.phase);
      out.step = m.step;
      out.total = m.total;
      return out;
    case line_kind::step:
      break;
  }

  out.kind = line_kind::step;
  out.total = m.total;
  std::uint64_t step = m.step;
  if ((m.per_epoch || m.goes_on) && m.total && *m.total > 0) {
    const bool same = s.last_format == m.format && s.last_batch.has_value() &&
                      (m.per_epoch || *m.total == s.last_batch_total);
    if (m.epoch) {
      out.epoch = m.epoch;
      step = *m.epoch * *m.total + m.step;
      out.counter_restarted =
          same && s.last_epoch && *m.epoch > *s.last_epoch && m.step < *s.last_batch;
    } else {
      // A finished bar drawn again after other output, with another description, is the next
      // epoch's bar of which the log kept only the last state (a notebook's "Loss=0.05
      // Batch_id=468 Accuracy=98.11: 100%|██████████| 469/469" after every epoch); tqdm's own
      // redraw when it closes a bar repeats the description.
      const std::uint64_t desc = description_hash(text);
      const bool redrawn = m.goes_on && same && m.step == *s.last_batch && m.step == *m.total &&
                           s.formats.lines > s.last_batch_line + 1 && desc != s.last_batch_desc;
      s.last_batch_desc = desc;
      if (s.formats.epoch_bar_back) {
        // An outer epoch bar went back since the last count: a new run, counted from where it
        // says.
        s.formats.epoch_bar_back = false;
        s.epoch_base = 0;
        s.epochs_counted = 0;
        out.counter_restarted = same && m.step < *s.last_batch;
      } else if (same && (m.step < *s.last_batch || redrawn)) {
        s.epoch_base += s.last_batch_total;
        ++s.epochs_counted;
        out.counter_restarted = true;
      }
      // A bar that may count the whole run says nothing of epochs until it has restarted.
      if (m.per_epoch || s.epochs_counted > 0) out.epoch = s.epochs_counted;
      step = s.epoch_base + m.step;
    }
    s.last_batch = m.step;
    s.last_batch_total = *m.total;
    s.last_batch_line = s.formats.lines;
    s.last_epoch = m.epoch;
  }
  // A learnt training bar that moves while an evaluation bar runs counts the evaluation's
  // batches (Lightning 1.x advances its epoch bar through them): not a step.
  if (m.bar && s.formats.eval_bar_open && s.formats.phase == "eval" &&
      s.formats.lines - s.formats.eval_bar_at <= 16) {
    if (why) *why += "; during an evaluation bar: its batches, not steps";
    out.kind = line_kind::none;
    return out;
  }
  if (m.epoch_rollover) out.counter_restarted = true;
  if (m.format == "learnt") {
    out.epoch = m.epoch;
    if (m.epochs) s.epochs = out.epochs = m.epochs;
  }
  s.last_format = m.format;
  out.step = step;

  if (!s.last_step) {
    out.step_gap = 1;
  } else if (step == *s.last_step) {
    out.step_gap = 0;
    if (why) *why += fmt::format("; step {} again: not a new step", step);
    return out;  // the same step again: the state stays
  } else if (step > *s.last_step) {
    out.step_gap = step - *s.last_step;
  } else if (step <= 1 || out.counter_restarted || m.total != s.last_total ||
             step * 2 < *s.last_step || s.learner.resume_pending()) {
    // The counter went back: a new run, a resume from a checkpoint, a new stage of training.
    out.counter_restarted = true;
    out.step_gap = step > 0 ? step : 1;
  } else {
    // A little behind the last step (metrics logged late, another rank lagging): not new.
    out.step_gap = 0;
    if (why) *why += fmt::format("; behind step {}: a late copy, not new", *s.last_step);
    return out;
  }
  if (why) {
    *why += out.counter_restarted ? fmt::format("; step {}, the counter went back", step)
                                  : fmt::format("; step {} (+{})", step, out.step_gap);
  }
  s.learner.on_new_step(step, out.step_gap, templ);
  s.learner.clear_resume();
  s.last_step = step;
  s.last_total = out.total;
  s.formats.phase = {};  // a new step: the phase before it, if any, is over
  s.ended_phase = {};
  return out;
}

}  // namespace joules::steps
