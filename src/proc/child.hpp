#pragma once
// The measured command: started in its own process group, given the terminal when joules has
// it, sent every signal joules receives (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2) as a
// group, and reaped.  Its exit status becomes joules' (death by signal N gives 128+N).
//
// Signals reach joules through a signalfd, so no handler ever runs on a joules thread and the
// main loop can wait for the child, its output and signals in one poll().  block_signals() must
// run before any other thread starts, so that every thread inherits the blocked mask.
//
// Thread-safety: one child_process per run, used by the main thread only.

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "util/clock.hpp"

namespace joules {

struct spawn_options {
  std::vector<std::string> argv;
  std::vector<std::pair<int, int>> dup2;  // {our fd, child fd}: the child's stdio for `wrap`
  std::vector<std::string> extra_env;     // "KEY=VALUE" added to our environment
  std::optional<int> controlling_tty_fd;  // `wrap` with a pty: the child's side of it
};

class child_process {
 public:
  // The full path of the program argv0 names, searched in PATH as execvp does.  Throws
  // fatal_error with status 127 (not found) or 126 (found but not executable), before anything
  // was started or truncated.
  static std::string resolve_command(const std::string& argv0);

  // Blocks the signals joules forwards (and SIGCHLD, SIGWINCH) in the calling thread.
  static void block_signals();

  // joules ignores SIGPIPE for itself; with `reset` the child gets the default action back.
  static void reset_sigpipe_in_child(bool reset);

  child_process();
  ~child_process();
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  // Starts the command.  Throws fatal_error when it cannot be started.
  void spawn(const spawn_options& options);

  pid_t pid() const { return pid_; }
  int signal_fd() const { return signal_fd_; }

  // Reads pending signals: forwards them to the child's group, follows job control (a stopped
  // child stops joules too), reaps.  Returns true once the child has exited.
  bool handle_signals();

  // Waits (blocking) until the child has exited, forwarding signals meanwhile.
  void wait();

  bool exited() const { return exited_; }
  mono_time start_time() const { return start_; }
  mono_time exit_time() const { return end_; }
  // 0-255 as a shell sees it: the exit code, or 128+N after death by signal N.
  int exit_status() const { return status_; }
  std::optional<int> exit_code() const { return code_; }
  std::optional<int> term_signal() const { return term_signal_; }
  // The first signal joules received and forwarded, if any.
  std::optional<int> forwarded_signal() const { return forwarded_; }
  // SIGWINCH arrived since the last call (for `wrap` to resize its pty).
  bool take_winch() { return std::exchange(winch_, false); }

 private:
  void reap();
  void on_stopped();

  int signal_fd_ = -1;
  pid_t pid_ = -1;
  bool exited_ = false;
  bool gave_terminal_ = false;
  bool winch_ = false;
  int status_ = 0;
  std::optional<int> code_;
  std::optional<int> term_signal_;
  std::optional<int> forwarded_;
  mono_time start_{};
  mono_time end_{};
};

}  // namespace joules
