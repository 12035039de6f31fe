#pragma once
// Passes the child's bytes to our stdout unchanged.  With --inline, it appends each step's
// energy to the step's line: the line's terminator, and everything after it, wait until
// accounting has the step's energy (a tick or two later), then go out with the annotation in
// front.  Waiting is bounded in time and size; past either bound the held bytes go out as they
// are, so an annotation can be lost but never the child's output.
//
// Not thread-safe: owned by wrap's main loop.

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

#include "proc/output_channel.hpp"
#include "util/clock.hpp"

namespace joules {

class output_gate {
 public:
  static constexpr std::size_t kMaxHeldBytes = 1 << 20;
  static constexpr std::chrono::milliseconds kMaxHold{1500};

  explicit output_gate(output_channel& out) : out_(out) {}

  void write(std::string_view bytes);
  // The bytes written so far ended a step line whose window is `window`: hold what follows.  A
  // later step line that joins the same window (it arrived at the same instant) moves the
  // annotation to itself.
  void hold_for(std::uint64_t window, mono_time now);
  // The annotation of `window` is known (empty: the window is not annotated).
  void annotate(std::uint64_t window, std::string_view text);
  // Lets go of bytes held too long or too many.
  void expire(mono_time now);
  void flush_all();

  bool holding() const { return !markers_.empty(); }

 private:
  struct marker {
    std::uint64_t window;
    std::size_t offset;  // in held_
    mono_time since;
  };
  void emit(std::string_view bytes);
  void release();

  output_channel& out_;
  std::string held_;
  std::deque<marker> markers_;
  std::deque<std::pair<std::uint64_t, std::string>> ready_;  // annotations not yet placed
};

}  // namespace joules
