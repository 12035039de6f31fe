#pragma once
// Splits the child's output into lines for the step parser, with bounded memory.  A line ends at
// \n, \r\n or a lone \r (a progress bar rewriting itself is a new line each time).  Only the
// first kMaxLine bytes of a line are kept for parsing — step numbers and metrics sit at the start
// of a line — so a 1 GB line without a newline costs 4 KiB, not 1 GB.  Pure logic.
//
// Not thread-safe: owned by wrap's reader loop.

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

namespace joules {

class line_splitter {
 public:
  static constexpr std::size_t kMaxLine = 4096;

  // Feeds a chunk; calls on_line(std::string_view line, std::size_t end) for every line it
  // completes, without its terminator; `end` is the offset in `chunk` just after the terminator.
  template <class F>
  void feed(std::string_view chunk, F&& on_line) {
    std::size_t i = 0;
    while (i < chunk.size()) {
      if (pending_cr_) {
        pending_cr_ = false;
        if (chunk[i] == '\n') {  // \r\n: the \r already ended the line
          ++i;
          continue;
        }
      }
      // The next terminator, found in bulk: the common case is long runs of plain bytes.
      const std::size_t j = next_terminator(chunk, i);
      if (j == chunk.size()) {
        append(chunk.substr(i));
        return;
      }
      if (chunk[j] == '\r') pending_cr_ = true;
      // A \r\n inside this chunk ends after the \n.
      const std::size_t end =
          chunk[j] == '\r' && j + 1 < chunk.size() && chunk[j + 1] == '\n' ? j + 2 : j + 1;
      if (line_.empty() && !truncated_) {
        // The whole line is in the chunk: no copy.
        on_line(chunk.substr(i, std::min(j - i, kMaxLine)), end);
      } else {
        append(chunk.substr(i, j - i));
        on_line(std::string_view(line_), end);
        line_.clear();
        truncated_ = false;
      }
      i = j + 1;
    }
  }

  // The unterminated rest, at end of output (its `end` is 0: it has no terminator).
  template <class F>
  void flush(F&& on_line) {
    if (!line_.empty()) on_line(std::string_view(line_), std::size_t{0});
    line_.clear();
    truncated_ = false;
  }

  // Whether a line has begun and not ended yet.
  bool mid_line() const { return !line_.empty() || truncated_; }

  std::size_t capacity() const { return line_.capacity(); }

 private:
  // The position of the first \n or \r at or after `from`, or chunk.size().
  static std::size_t next_terminator(std::string_view chunk, std::size_t from) {
    const char* p = chunk.data() + from;
    const char* end = chunk.data() + chunk.size();
    // memchr is vectorised; a \r is rare outside progress bars, so look for \n first and for
    // \r only before it.
    const void* nl = std::memchr(p, '\n', static_cast<std::size_t>(end - p));
    const char* stop = nl != nullptr ? static_cast<const char*>(nl) : end;
    const void* cr = std::memchr(p, '\r', static_cast<std::size_t>(stop - p));
    if (cr != nullptr) stop = static_cast<const char*>(cr);
    return static_cast<std::size_t>(stop - chunk.data());
  }

  void append(std::string_view s) {
    if (truncated_) return;
    const std::size_t room = kMaxLine - line_.size();
    if (s.size() > room) {
      line_.append(s.substr(0, room));
      truncated_ = true;
    } else {
      line_.append(s);
    }
  }

  std::string line_;
  bool truncated_ = false;
  bool pending_cr_ = false;
};

}  // namespace joules
