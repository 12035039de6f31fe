#pragma once
// The terminal side of `joules monitor`: the alternate screen in raw mode for the live view,
// restored on every way out, and the events the main loop waits for (keys, resize, signals).
//
// Why no ncurses: the view is a full redraw per frame (one write of at most a few KB), so a
// screen-diffing library buys nothing, and five escape sequences (alternate screen, cursor
// hide/show, home, erase) are understood by every terminal joules will meet (xterm, tmux,
// screen, the Linux console).  It also keeps the build free of another -dev package.
//
// Signals: app::main blocks SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGWINCH in every thread; the
// event loop reads them from a signalfd, so a signal ends the loop and the destructors restore
// the terminal.  Raw mode turns ISIG off: Ctrl-C, Ctrl-\ and Ctrl-Z arrive as keys.
//
// Not thread-safe: the main thread only.

#include <termios.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "monitor/keys.hpp"
#include "util/clock.hpp"

namespace joules::monitor {

// Reads SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGWINCH (blocked since app::main) from a signalfd,
// and keys from stdin when it is a terminal.
class event_source {
 public:
  enum class kind { timeout, keys, resize, signal };
  struct event {
    kind what = kind::timeout;
    int signal = 0;               // for kind::signal
    std::vector<key_press> keys;  // for kind::keys: what one read brought, in order
  };

  explicit event_source(bool keys);
  ~event_source();
  event_source(const event_source&) = delete;
  event_source& operator=(const event_source&) = delete;

  // Waits until `deadline` or the first event.  EINTR and bytes that are no key are absorbed.
  event wait(mono_time deadline);

 private:
  int signal_fd_ = -1;
  bool keys_ = false;
};

// The live view's terminal: the alternate screen, cursor hidden, stdin in raw mode.  Entered by
// the constructor, left by the destructor (also during stack unwinding).  Nothing beyond what
// htop and btop use: the alternate screen, cursor movement, erase, SGR colours, so that it works
// in tmux, screen and over SSH.
class screen_session {
 public:
  screen_session();
  ~screen_session();
  screen_session(const screen_session&) = delete;
  screen_session& operator=(const screen_session&) = delete;

  // Leaves and re-enters around a suspension (Ctrl-Z): the shell gets its terminal back.
  void suspend();

  // Replaces what is on screen with `frame` (lines without newlines), in one write.
  void draw(const std::vector<std::string>& frame, bool clear_first);

 private:
  void enter();
  void leave();

  std::optional<termios> saved_;
  bool entered_ = false;
};

struct terminal_size {
  std::size_t columns = 80;
  std::size_t lines = 24;
};
terminal_size size_of_stdout();

// Writes all of `text` to stdout with write(2), across partial writes and EINTR.  Returns false
// when the reader has gone (EPIPE) or another error happened.
bool write_stdout(std::string_view text);

}  // namespace joules::monitor
