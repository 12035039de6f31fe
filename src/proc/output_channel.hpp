#pragma once
// One of joules' own outputs (stdout or stderr) as `wrap` shares it between the command's bytes
// and joules' own lines: JSONL records (--output - on stdout, --json on stderr), predictions and
// warnings.  The command's bytes go out at once and unchanged.  Joules' lines go out only where
// a line of the command's output has ended, so that they never land inside one: a line of ours
// that comes while the command is in the middle of a line (a progress bar drawn without a
// newline) waits for the command's next newline, and goes out right after it.  A line that has
// waited kMaxWait goes out after a newline of joules' own, which ends the command's line early;
// so do the lines still waiting when the run ends.
//
// Not thread-safe: owned by wrap's main loop.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "util/clock.hpp"

namespace joules {

class output_channel {
 public:
  // Longer than output_gate::kMaxHold, so that an --inline annotation keeps its line.
  static constexpr std::chrono::milliseconds kMaxWait{2000};
  // Joules' lines kept waiting at most; past it they go out as for kMaxWait.
  static constexpr std::size_t kMaxWaitingBytes = 1 << 20;

  explicit output_channel(int fd) : fd_(fd) {}

  // The command's bytes, unchanged.
  void write(std::string_view bytes);
  // One line of joules' own, its newline included.
  void own_line(std::string_view line, mono_time now);
  // Lets out lines that have waited too long.
  void expire(mono_time now);
  // The run is over: lines still waiting go out, and from now on every line of ours at once,
  // after a newline of ours when the command's output ended in the middle of a line.  With
  // `end_line`, that newline is written even when no line of ours is waiting (a summary line
  // follows on this stream).
  void finish(bool end_line);

  bool at_line_start() const { return at_line_start_; }
  bool waiting() const { return !waiting_.empty(); }
  // Lines of ours (and bytes of the command's) that could not be written: a closed pipe.
  std::uint64_t lost_lines() const { return lost_lines_; }
  std::uint64_t write_errors() const { return write_errors_; }

 private:
  bool emit(std::string_view bytes);
  void release();  // writes the waiting lines (at a line start)

  int fd_;
  bool at_line_start_ = true;
  bool finished_ = false;
  std::string waiting_;
  std::uint64_t waiting_lines_ = 0;
  mono_time waiting_since_{};
  std::uint64_t lost_lines_ = 0;
  std::uint64_t write_errors_ = 0;
};

}  // namespace joules
