#pragma once
// A pseudo-terminal for the child's stdout in `joules wrap`, so that C, C++, Rust and Python
// trainers line-buffer their output as they do on a terminal (on a pipe, C stdio buffers 4 KiB
// blocks, and step lines would arrive in bursts, ruining per-step timing).  Output processing is
// off on it (no \n -> \r\n), so bytes pass through unchanged.
//
// Thread-safety: used by the main thread only.

#include <sys/ioctl.h>

#include <optional>

namespace joules {

class pty_pair {
 public:
  // Opens a master/slave pair sized like `size_from_fd` when that is a terminal, else 200x50.
  explicit pty_pair(int size_from_fd);
  ~pty_pair();
  pty_pair(const pty_pair&) = delete;
  pty_pair& operator=(const pty_pair&) = delete;

  int master() const { return master_; }
  int slave() const { return slave_; }
  // After the child has started: only the child keeps the slave open, so the master reads EOF
  // (EIO on Linux) once the child and everything it started have closed it.
  void close_slave();
  // Copies the size of `fd`'s terminal to the pty (on SIGWINCH); true when the size changed.
  bool resize_from(int fd);

 private:
  int master_ = -1;
  int slave_ = -1;
};

}  // namespace joules
