#pragma once
// What a stream joules writes to can show: whether it is a terminal, whether colour is wanted
// there, whether it moves its cursor, and how wide it is.  The one place these are decided, so
// that every subcommand agrees: colour only on a terminal, never with NO_COLOR set
// (https://no-color.org) or TERM=dumb; no full-screen view on TERM=dumb, a terminal that
// understands no escape sequence at all.

#include <cstddef>

namespace joules::term {

struct capabilities {
  bool tty = false;
  bool color = false;
  bool cursor = false;       // a terminal that moves its cursor: not TERM=dumb
  std::size_t columns = 80;  // the terminal's width; COLUMNS, else 80, when not a terminal
  std::size_t lines = 24;
};

// Of file descriptor `fd` (STDOUT_FILENO, STDERR_FILENO), read now.
capabilities of(int fd);

// Whether the environment asks for no colour (NO_COLOR set and not empty, or TERM=dumb).
bool color_refused();
// TERM=dumb: the terminal understands no escape sequence.
bool dumb_terminal();

}  // namespace joules::term
