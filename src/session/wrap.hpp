#pragma once
// `joules wrap`: the energy of every training step.  The command's stdout and stderr pass
// through joules byte for byte (on pseudo-terminals, so that every language's stdio
// line-buffers them); each line is stamped on arrival and handed to the step parser; step lines
// become boundaries for the sampler, which places energy at those instants from its readings.
// Nothing on the line path waits for the GPU.
//
//   child output ─► line splitter ─► step parser ─► step_windows ─► sampler.boundary(t)
//   sampler ─► finished windows ─► (queue, eventfd) ─► wrap_report ─► records, annotations

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "session/measurement.hpp"
#include "session/wrap_report.hpp"

namespace joules::session {

// What tune and sweep add to wrap's loop (src/session/tune.cpp, sweep.cpp): they see each step
// as it is placed and each window as it is accounted, may end the command, and act once it has
// ended.  Steps reach on_step from whatever placed them (a log line today), so a session built
// on these hooks works with any source of steps.  Every call is on wrap's main loop; none may
// wait for the GPU.
class wrap_hooks {
 public:
  virtual ~wrap_hooks() = default;
  // The subcommand the records name ("tune", "sweep").
  virtual std::string_view subcommand() const = 0;
  // Once the devices are chosen, before the outputs open (measurement::device_check).
  virtual void check(sampler& s, const std::vector<std::size_t>& measured) {
    (void)s;
    (void)measured;
  }
  // Sampling has started; the command starts right after.  `m` outlives every later call.
  virtual void before_command(measurement& m) { (void)m; }
  // The command has started and session_start is written: records may follow.
  virtual void command_started() {}
  // A step line closed window `window` at `t`: the steps after it run in window + 1.
  virtual void on_step(std::uint64_t window, mono_time t) {
    (void)window;
    (void)t;
  }
  // Each accounted window with its label, in window order.
  virtual void on_window(const window_result& w, const window_label& l) {
    (void)w;
    (void)l;
  }
  // Asked after each step: true ends the command (SIGTERM to its process group, once).
  virtual bool stop_command() { return false; }
  // The command has ended and sampling still runs (limits are restored here).  Called once,
  // also when the loop ends by an exception.
  virtual void after_command() {}
  // The end: sections of session_end (measurement::add_section) and parts of the summary.
  virtual void finish(measurement& m, std::vector<summary_part>& summary) {
    (void)m;
    (void)summary;
  }

  // How the hooks print a line for people, between the command's lines (set by wrap's loop
  // before before_command; lines said earlier go straight to stderr).
  void set_notice(std::function<void(const std::string&)> notice) { notice_ = std::move(notice); }

 protected:
  // "joules: LINE" on stderr.
  void say(const std::string& line) const;

 private:
  std::function<void(const std::string&)> notice_;
};

// How wrap treats the command's output.
struct wrap_output {
  std::vector<std::string> step_regexes;  // --step-regex, tried before the built-in formats
  // --inline (true) / --no-inline (false); unset: on the streams that are terminals.
  std::optional<bool> inline_energy;
  bool use_pty = true;  // false: --no-pty
};

// Runs settings.command and measures the energy of each of its steps; returns the exit status
// joules ends with (the command's).  Throws usage_error (a bad --step-regex) or fatal_error
// before the command starts.  `hooks`, when given, is told about the run as it goes.
int wrap(const measure_settings& settings, const wrap_settings& steps, const wrap_output& output,
         wrap_hooks* hooks = nullptr);

}  // namespace joules::session
