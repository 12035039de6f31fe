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
// Steps the command reports itself (joules_step() of libjoules through wrap's step channel,
// proc/step_channel.hpp) close step windows at their exact instants, as step lines do at their
// arrival.  From the first reported step on, step lines no longer close windows (each step
// would be counted twice, and the line arrives later than the step ended): they only add their
// metrics to the last step window.  Phase lines still open and close phases.
//
// No window is empty of time: lines that arrive at the same instant as the last boundary (several
// lines in one read, or lines read after the command ended, which are stamped with its end) do
// not open a window of zero length.  A step line joins the step window closed at that instant
// (its steps are added to it); a phase start or end only changes what the next window is.
//
// Pure logic.  Not thread-safe: owned by wrap's main loop.

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proc/stream_kind.hpp"
#include "steps/step_parser.hpp"
#include "util/clock.hpp"

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
  std::optional<child_stream> stream;  // the stream of that line
  // Per-epoch counters: the epoch (0-based) and the number of epochs, when the log says them.
  std::optional<std::uint64_t> epoch;
  std::optional<std::uint64_t> epochs;
  // Reported steps: the tokens they processed, when they said (summed over the window's steps).
  std::optional<std::uint64_t> tokens;
};

// What a line did.
struct line_outcome {
  // A boundary at the line's instant: the caller hands the instant to the sampler.
  bool boundary = false;
  // A step line: the window whose energy it reports (for --inline), which it closed or joined.
  std::optional<std::uint64_t> step_window;
};

class step_windows {
 public:
  // A parsed line of `stream` that arrived at instant t (instants never go back).
  line_outcome on_line(const steps::parsed_line& line, std::uint64_t line_number, mono_time t,
                       child_stream stream = child_stream::out);

  // A step the command reported (proc/step_channel.hpp) ended at t: `step` its number,
  // `tokens` the tokens it processed (0: unknown).  Instants before the last boundary join the
  // window closed there.
  line_outcome on_reported_step(std::uint64_t step, std::uint64_t tokens, mono_time t);
  bool steps_reported() const { return reported_; }

  // The command ended at `t`; the sampler places the last boundary there.  Lines stamped t from
  // now on belong to the last window, which they close.
  void set_end(mono_time t) { end_ = t; }

  // The run ended: closes the open window (the tail, or the window the lines at the end closed).
  void on_exit();

  // Labels are handed out in window order, once each, as accounting reports windows.
  window_label take_label(std::uint64_t window_index);

  // How many windows have been closed so far (= boundaries after the start).
  std::uint64_t closed() const { return closed_; }
  std::size_t pending_labels() const { return labels_.size(); }
  bool seen_step() const { return seen_step_; }
  std::optional<std::uint64_t> last_total() const { return last_total_; }

 private:
  enum class open_kind { setup, step, phase };
  line_outcome on_parsed(const steps::parsed_line& line, std::uint64_t line_number, mono_time t,
                         std::optional<child_stream> stream, std::uint64_t tokens);
  void close(window_label label, mono_time t);
  // The label of the open window: setup, its phase, or `after_steps` when steps are under way.
  window_label open_label(window_kind after_steps) const;
  // Metrics on a line that is not a boundary (a Hugging Face log dict, a validation line at the
  // same step) belong to the window that just closed, if it has not been reported yet.
  void attach_metrics(const std::vector<steps::metric>& metrics);

  open_kind open_ = open_kind::setup;
  std::string open_phase_;
  bool seen_step_ = false;
  std::optional<std::uint64_t> last_total_;
  std::optional<mono_time> last_boundary_;
  std::optional<mono_time> end_;
  // Closed at the command's end, not by a boundary of ours: lines stamped with the end instant.
  std::optional<window_label> final_;
  // Steps of step lines that arrived with no time of their own, for the next step window.
  std::uint64_t carried_gap_ = 0;
  std::uint64_t carried_tokens_ = 0;
  bool reported_ = false;  // a step was reported: step lines no longer close windows
  std::optional<std::uint64_t> last_reported_;
  std::uint64_t closed_ = 0;
  std::uint64_t first_label_index_ = 0;
  std::deque<window_label> labels_;
  // Per-epoch counters: the number of epochs, from an "Epoch e/E" header or an epoch bar.
  std::optional<std::uint64_t> epochs_;
};

}  // namespace joules
