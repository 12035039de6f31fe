#pragma once
// How the command's stdout and stderr reach `wrap`.  Both are read (step lines come on either:
// the Hugging Face Trainer's tqdm bar and Python's logging write to stderr) and passed on, byte
// for byte, to joules' stdout and stderr.
//
//   joules' stdout and stderr are one file (the same terminal, `>log 2>&1`, `2>&1 | tee`):
//     the command gets one channel for both, so that its stdout and stderr lines keep their
//     order and a terminal behaves exactly as without joules;
//   otherwise: one channel each.
//
// A channel is a pseudo-terminal, so that C, C++, Rust and Python programs line-buffer their
// output as on a terminal: always for stdout, for stderr when joules' stderr is a terminal (a
// program that writes stderr to a file expects a file, and C's stderr is unbuffered anyway).
// With --no-pty every channel is a pipe (and PYTHONUNBUFFERED=1 is set).  Output processing is
// off on the pseudo-terminals: bytes come out exactly as written.
//
// Thread-safety: used by the main thread only.

#include <array>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "proc/pty.hpp"
#include "proc/stream_kind.hpp"

namespace joules {

class child_streams {
 public:
  struct source {
    int fd = -1;  // the end joules reads (non-blocking)
    child_stream stream =
        child_stream::out;  // stdout, or stderr (a shared channel reads as stdout)
    int destination = 1;    // STDOUT_FILENO or STDERR_FILENO: where its bytes go
    std::optional<pty_pair> pty;
  };

  // Opens the channels.  Throws fatal_error when a pseudo-terminal or pipe cannot be opened.
  explicit child_streams(bool use_pty);
  ~child_streams();
  child_streams(const child_streams&) = delete;
  child_streams& operator=(const child_streams&) = delete;

  // Whether joules' stdout and stderr are one file, and the command has one channel for both.
  bool shared() const { return sources_.size() == 1; }
  bool uses_pty() const { return use_pty_; }
  // {our fd, the command's fd} for spawn_options::dup2.
  std::vector<std::pair<int, int>> child_fds() const;
  // After the command has started: closes the command's ends here, so that reading them ends
  // when the command (and whatever it started) has closed them.
  void close_child_ends();
  // Copies the size of joules' terminals to the pseudo-terminals; true when one changed.
  bool resize();
  std::deque<source>& sources() { return sources_; }

 private:
  bool use_pty_;
  std::deque<source> sources_;   // pseudo-terminals do not move
  std::vector<int> child_ends_;  // pipes' write ends
};

// Whether two descriptors are the same open file or device (st_dev and st_ino).
bool same_file(int a, int b);

}  // namespace joules
