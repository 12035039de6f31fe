#include "wrap/step_windows.hpp"

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

void step_windows::close(window_label label) {
  labels_.push_back(std::move(label));
  ++closed_;
}

bool step_windows::on_line(const steps::parsed_line& line, std::uint64_t line_number) {
  switch (line.kind) {
    case steps::line_kind::none:
      attach_metrics(line.metrics);
      return false;
    case steps::line_kind::step: {
      if (line.step_gap == 0) {  // the same step again (a validation line, another rank's copy)
        attach_metrics(line.metrics);
        return false;
      }
      window_label l;
      l.line = line_number;
      l.metrics = line.metrics;
      l.total = line.total;
      if (open_ == open_kind::setup) {
        l.kind = window_kind::setup;
      } else if (open_ == open_kind::phase) {
        // The phase ran up to this step line: its end was not in the log.
        l.kind = window_kind::phase;
        l.phase = open_phase_;
      } else {
        l.kind = window_kind::step;
        l.step = line.step;
        l.step_gap = line.step_gap;
        l.counter_restarted = line.counter_restarted;
      }
      if (line.total) last_total_ = line.total;
      if (seen_step_) steps_done_ += line.step_gap;
      seen_step_ = true;
      open_ = open_kind::step;
      close(std::move(l));
      return true;
    }
    case steps::line_kind::phase_begin: {
      if (open_ == open_kind::phase && open_phase_ == line.phase) return false;
      window_label l;
      l.line = line_number;
      if (open_ == open_kind::setup) {
        l.kind = window_kind::setup;
      } else if (open_ == open_kind::phase) {
        l.kind = window_kind::phase;
        l.phase = open_phase_;
      } else {
        l.kind = window_kind::other;
      }
      open_ = open_kind::phase;
      open_phase_ = line.phase;
      close(std::move(l));
      return true;
    }
    case steps::line_kind::phase_end: {
      if (open_ == open_kind::setup) {
        // Results of an evaluation before the first step (nanoGPT's step 0): it is part of the
        // setup, which goes on until the first step line.
        attach_metrics(line.metrics);
        return false;
      }
      window_label l;
      l.line = line_number;
      l.kind = window_kind::phase;
      // A result line with no start line before it (nanoGPT's "step N: ... val loss",
      // Megatron's "validation loss at iteration N") reports a phase that ran since the last
      // step line: that window was the phase.
      l.phase = open_ == open_kind::phase ? open_phase_ : line.phase;
      l.metrics = line.metrics;
      open_ = open_kind::step;
      close(std::move(l));
      return true;
    }
  }
  return false;
}

void step_windows::attach_metrics(const std::vector<steps::metric>& metrics) {
  if (metrics.empty() || labels_.empty()) return;
  window_label& last = labels_.back();
  if (last.kind != window_kind::step && last.kind != window_kind::phase) return;
  for (const auto& m : metrics) {
    bool replaced = false;
    for (auto& have : last.metrics) {
      if (have.name == m.name) {
        have.value = m.value;
        replaced = true;
      }
    }
    if (!replaced) last.metrics.push_back(m);
  }
}

void step_windows::on_exit() {
  window_label l;
  if (open_ == open_kind::setup) {
    l.kind = window_kind::setup;
  } else if (open_ == open_kind::phase) {
    l.kind = window_kind::phase;
    l.phase = open_phase_;
  } else {
    l.kind = window_kind::tail;
  }
  close(std::move(l));
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
