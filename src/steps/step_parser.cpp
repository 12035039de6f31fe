// The parser's state machine: which format a line is in (steps/formats_*.cpp), and what it means
// given the lines before it: a new step or a repeat, how many steps since the last step line,
// whether the counter restarted, whether a phase starts or was already announced.

#include "steps/step_parser.hpp"

#include "steps/custom_format.hpp"
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
  std::optional<std::uint64_t> last_epoch;
  std::string_view last_format;
  // The phase of the last phase_end with no step or phase start since: a second end of the same
  // phase ("Configuration saved in ...", "Model weights saved in ...") is not another boundary.
  std::string_view ended_phase;
};

step_parser::step_parser(std::vector<std::string> custom, bool prefilter)
    : custom_(custom.empty() ? nullptr : std::make_unique<custom_formats>(custom)),
      state_(std::make_unique<state>()),
      prefilter_(prefilter) {}

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

// Built-in formats, cheapest and most specific first.
bool match_builtin(std::string_view body, format_state& st, match& m) {
  if (!has_digit(body)) return match_phase(body, m);
  const bool found = match_bar(body, st, m) || match_llm(body, st, m) || match_other(body, st, m) ||
                     match_phase(body, m) || match_generic(body, m);
  // A configuration printed at the start (a line of no format, or a dict) may say the epochs.
  if (m.kind == line_kind::none && !m.epochs) m.epochs = stated_epochs(body);
  return found;
}

}  // namespace

parsed_line step_parser::parse(std::string_view line) {
  state& s = *state_;
  parsed_line out;
  out.epochs = s.epochs;
  // Most lines of a log are not steps: rejected in one pass over their bytes.  Not while the
  // metric lines of an OLMo or Composer header may follow (any indented "key: value").
  if (prefilter_ && !custom_ && s.formats.metric_block.empty() && !may_be_step_related(line)) {
    return out;
  }
  const std::string_view text = visible_text(line, s.scratch);
  match m;
  bool found = false;
  if (custom_) {
    if (const auto c = custom_->find(text)) {
      m.kind = line_kind::step;
      m.step = c->step;
      m.total = c->total;
      m.format = "custom";
      m.metrics_text = text;
      found = true;
    }
  }
  if (!found) {
    const std::string_view body = strip_prefixes(text);
    if (body.empty()) return out;
    // Metric lines after an OLMo or Composer step header belong to that step.
    const std::string_view block = s.formats.metric_block;
    s.formats.metric_block = {};
    found = match_builtin(body, s.formats, m);
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
      // A phase announced again (each update of an evaluation bar) is not a new phase.
      if (s.formats.phase == m.phase) return out;
      s.formats.phase = m.phase;
      s.ended_phase = {};
      out.kind = m.kind;
      out.phase = std::string(m.phase);
      out.step = m.step;
      return out;
    case line_kind::phase_end:
      // A progress bar at 100 % ends only the phase its updates began.
      if ((m.format == "tqdm" || m.format == "lightning") && s.formats.phase != m.phase) return out;
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
  if (m.per_epoch && m.total && *m.total > 0) {
    const bool same = s.last_format == m.format && s.last_batch.has_value();
    if (m.epoch) {
      out.epoch = m.epoch;
      step = *m.epoch * *m.total + m.step;
      out.counter_restarted =
          same && s.last_epoch && *m.epoch > *s.last_epoch && m.step < *s.last_batch;
    } else {
      if (same && m.step < *s.last_batch) {
        s.epoch_base += s.last_batch_total;
        ++s.epochs_counted;
        out.counter_restarted = true;
      }
      out.epoch = s.epochs_counted;
      step = s.epoch_base + m.step;
    }
    s.last_batch = m.step;
    s.last_batch_total = *m.total;
    s.last_epoch = m.epoch;
  }
  s.last_format = m.format;
  out.step = step;

  if (!s.last_step) {
    out.step_gap = 1;
  } else if (step == *s.last_step) {
    out.step_gap = 0;
    return out;  // the same step again: the state stays
  } else if (step > *s.last_step) {
    out.step_gap = step - *s.last_step;
  } else if (step <= 1 || out.counter_restarted || m.total != s.last_total ||
             step * 2 < *s.last_step) {
    // The counter went back: a new run or a new stage of training.
    out.counter_restarted = true;
    out.step_gap = step > 0 ? step : 1;
  } else {
    // A little behind the last step (metrics logged late, another rank lagging): not new.
    out.step_gap = 0;
    return out;
  }
  s.last_step = step;
  s.last_total = out.total;
  s.formats.phase = {};  // a new step: the phase before it, if any, is over
  s.ended_phase = {};
  return out;
}

}  // namespace joules::steps
