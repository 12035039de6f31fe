#include "windows/step_windows.hpp"

#include <stdexcept>

namespace joules {

std::string_view to_string(window_kind k) {
  switch (k) {
    case window_kind::setup:
      return "setup";
    case window_kind::step:
      return "step";
    case window_kind::phase:
      return "phase";
    case window_kind::other:
      return "other";
    case window_kind::tail:
      return "tail";
  }
  return "other";
}

void step_windows::close(window_label label, mono_time t) {
  labels_.push_back(std::move(label));
  ++closed_;
  last_boundary_ = t;
}

namespace {

void merge_metrics(std::vector<steps::metric>& into, const std::vector<steps::metric>& from) {
  for (const auto& m : from) {
    bool replaced = false;
    for (auto& have : into) {
      if (have.name == m.name) {
        have.value = m.value;
        replaced = true;
      }
    }
    if (!replaced) into.push_back(m);
  }
}

}  // namespace

line_outcome step_windows::on_line(const steps::parsed_line& line, std::uint64_t line_number,
                                   mono_time t, child_stream stream) {
  if (reported_ && line.kind == steps::line_kind::step) {
    // The command reports its steps itself: the line only carries metrics.
    if (line.epochs) epochs_ = line.epochs;
    attach_metrics(line.metrics);
    return {};
  }
  return on_parsed(line, line_number, t, stream, 0);
}

line_outcome step_windows::on_reported_step(std::uint64_t step, std::uint64_t tokens, mono_time t) {
  reported_ = true;
  steps::parsed_line line;
  line.kind = steps::line_kind::step;
  line.step = step;
  // Steps the command did not report (a full queue) are in the window of the next one.
  line.step_gap = last_reported_ && step > *last_reported_ ? step - *last_reported_ : 1;
  line.counter_restarted = last_reported_ && step <= *last_reported_;
  last_reported_ = step;
  return on_parsed(line, 0, t, std::nullopt, tokens);
}

line_outcome step_windows::on_parsed(const steps::parsed_line& line, std::uint64_t line_number,
                                     mono_time t, std::optional<child_stream> stream,
                                     std::uint64_t tokens) {
  if (line.epochs) epochs_ = line.epochs;
  line_outcome out;
  if (line.kind == steps::line_kind::none ||
      (line.kind == steps::line_kind::step && line.step_gap == 0)) {
    // Metrics only, or the same step again (a validation line, another rank's copy).
    attach_metrics(line.metrics);
    return out;
  }
  if (line.kind == steps::line_kind::phase_begin && open_ == open_kind::phase &&
      open_phase_ == line.phase) {
    return out;
  }
  if (line.kind == steps::line_kind::phase_end && open_ == open_kind::setup) {
    // Results of an evaluation before the first step (nanoGPT's step 0): it is part of the
    // setup, which goes on until the first step line.
    attach_metrics(line.metrics);
    return out;
  }

  // The label of the open window, which this line closes.
  window_label l =
      open_label(line.kind == steps::line_kind::step ? window_kind::step : window_kind::other);
  l.line = line_number;
  l.stream = stream;
  const bool step = line.kind == steps::line_kind::step;
  const bool first_step = step && !seen_step_;
  if (step) {
    l.metrics = line.metrics;
    l.total = line.total;
    l.epoch = line.epoch;
    l.epochs = line.epoch ? epochs_ : std::nullopt;
    if (l.kind == window_kind::step) {
      l.step = line.step;
      l.step_gap = line.step_gap + carried_gap_;
      l.counter_restarted = line.counter_restarted;
      if (tokens > 0 || carried_tokens_ > 0) l.tokens = tokens + carried_tokens_;
    }
    if (line.total) last_total_ = line.total;
    seen_step_ = true;
    open_ = open_kind::step;
  } else if (line.kind == steps::line_kind::phase_begin) {
    open_ = open_kind::phase;
    open_phase_ = line.phase;
  } else {
    // A result line with no start line before it (nanoGPT's "step N: ... val loss",
    // Megatron's "validation loss at iteration N") reports a phase that ran since the last
    // step line: that window was the phase.
    if (l.kind != window_kind::phase) {
      l.kind = window_kind::phase;
      l.phase = line.phase;
    }
    l.metrics = line.metrics;
    open_ = open_kind::step;
  }

  const bool at_end = end_ && t >= *end_;
  if (!at_end && !(last_boundary_ && t <= *last_boundary_)) {
    carried_gap_ = 0;
    carried_tokens_ = 0;
    const bool closes_step = l.kind == window_kind::step;
    close(std::move(l), t);
    out.boundary = true;
    if (closes_step) out.step_window = closed_ - 1;
    return out;
  }

  // A boundary here would leave a window with no time: at the command's end (the sampler's
  // last boundary), or at the instant of the last boundary (the open window began there).
  if (at_end && !final_) {
    // The first line at the end: the last window is the one it closes.
    if (l.kind == window_kind::step) out.step_window = closed_;
    carried_gap_ = 0;
    carried_tokens_ = 0;
    final_ = std::move(l);
    return out;
  }
  window_label* join = at_end ? &*final_ : (labels_.empty() ? nullptr : &labels_.back());
  if (!step) {
    if (join != nullptr && line.kind == steps::line_kind::phase_end) attach_metrics(line.metrics);
    return out;
  }
  if (join != nullptr && join->kind == window_kind::step) {
    // Its steps ran before that instant: they join the step window closed there.
    join->step = line.step;
    join->step_gap += line.step_gap + carried_gap_;
    carried_gap_ = 0;
    if (tokens > 0 || carried_tokens_ > 0)
      join->tokens = join->tokens.value_or(0) + tokens + carried_tokens_;
    carried_tokens_ = 0;
    join->total = line.total;
    join->counter_restarted = join->counter_restarted || line.counter_restarted;
    join->line = line_number;
    join->stream = stream;
    join->epoch = line.epoch;
    join->epochs = line.epoch ? epochs_ : std::nullopt;
    merge_metrics(join->metrics, line.metrics);
    out.step_window = at_end ? closed_ : closed_ - 1;
  } else if (!first_step) {
    // No step window to join (the window closed there was the setup or a phase, or has been
    // reported already): its steps count in the next step window.
    carried_gap_ += line.step_gap;
    carried_tokens_ += tokens;
  }
  return out;
}

void step_windows::attach_metrics(const std::vector<steps::metric>& metrics) {
  if (metrics.empty()) return;
  window_label* last = final_ ? &*final_ : (labels_.empty() ? nullptr : &labels_.back());
  if (last == nullptr) return;
  if (last->kind != window_kind::step && last->kind != window_kind::phase) return;
  merge_metrics(last->metrics, metrics);
}

void step_windows::on_exit() {
  if (final_) {
    labels_.push_back(std::move(*final_));
    final_.reset();
    ++closed_;
    return;
  }
  labels_.push_back(open_label(window_kind::tail));
  ++closed_;
}

window_label step_windows::open_label(window_kind after_steps) const {
  window_label l;
  if (open_ == open_kind::setup) {
    l.kind = window_kind::setup;
  } else if (open_ == open_kind::phase) {
    l.kind = window_kind::phase;
    l.phase = open_phase_;
  } else {
    l.kind = after_steps;
  }
  return l;
}

window_label step_windows::take_label(std::uint64_t window_index) {
  if (labels_.empty() || window_index != first_label_index_) {
    throw std::logic_error("step_windows: windows must be taken in order");
  }
  window_label l = std::move(labels_.front());
  labels_.pop_front();
  ++first_label_index_;
  return l;
}

}  // namespace joules
