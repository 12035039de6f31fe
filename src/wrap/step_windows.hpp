#pragma once
// Decides which window every joule of a wrapped run lands in.  The step parser says what a line
// is; this turns that into boundaries (timestamps handed to the sampler) and remembers what
// each window was, so that when accounting reports window k its label is at hand:
//
//   setup   from the start to the first step line (it holds step 1's work too: nothing in a
//           log says when step 1 began);
//   step N  from the previous step line (or the end of a phase) to step N's line; a log every
//           k steps gives one window of k steps;
//   PHASE   from a phase's start line (evaluation, checkpoint, ...) to its end line or the next
//           step line;
//   other   between a step line and a phase that starts before the next step;
//   tail    from the last step line (or phase) to the end of the run.
//
// Pure logic.  Not thread-safe: owned by wrap's main loop.

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "steps/step_parser.hpp"

namespace joules {

enum class window_kind { setup, step, phase, other, tail };
std::string_view to_string(window_kind k);

struct window_label {
  window_kind kind = window_kind::setup;
  std::uint64_t step = 0;      // kind == step
  std::uint64_t step_gap = 0;  // steps in the window (kind == step)
  std::optional<std::uint64_t> total;
  bool counter_restarted = false;
  std::string phase;  // kind == phase: "eval", "checkpoint", ...
  std::vector<steps::metric> metrics;
  std::uint64_t line = 0;  // line number (1-based) of the line that closed the window; 0 at exit
};

class step_windows {
 public:
  // A parsed line that arrived at instant t.  Returns true when it is a boundary: the caller
  // must then hand t to the sampler (and the window that just closed is label(index) below).
  bool on_line(const steps::parsed_line& line, std::uint64_t line_number);

  // The run ended: closes the open window (returns its label index).
  void on_exit();

  // Labels are handed out in window order, once each, as accounting reports windows.
  window_label take_label(std::uint64_t window_index);

  // How many windows have been closed so far (= boundaries after the start).
  std::uint64_t closed() const { return closed_; }
  std::size_t pending_labels() const { return labels_.size(); }
  bool seen_step() const { return seen_step_; }
  std::optional<std::uint64_t> last_total() const { return last_total_; }
  std::uint64_t steps_done() const { return steps_done_; }  // sum of step gaps so far

 private:
  enum class open_kind { setup, step, phase };
  void close(window_label label);
  // Metrics on a line that is not a boundary (a Hugging Face log dict, a validation line at the
  // same step) belong to the window that just closed, if it has not been reported yet.
  void attach_metrics(const std::vector<steps::metric>& metrics);

  open_kind open_ = open_kind::setup;
  std::string open_phase_;
  bool seen_step_ = false;
  std::optional<std::uint64_t> last_total_;
  std::uint64_t steps_done_ = 0;
  std::uint64_t closed_ = 0;
  std::uint64_t first_label_index_ = 0;
  std::deque<window_label> labels_;
};

}  // namespace joules
