#include "term/terminal.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

#include "util/strings.hpp"

namespace joules::term {

bool dumb_terminal() {
  const char* t = std::getenv("TERM");
  return t != nullptr && std::string_view(t) == "dumb";
}

bool color_refused() {
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && no_color[0] != '\0') return true;
  return dumb_terminal();
}

capabilities of(int fd) {
  capabilities c;
  c.tty = isatty(fd) != 0;
  c.color = c.tty && !color_refused();
  c.cursor = c.tty && !dumb_terminal();
  winsize ws{};
  if (c.tty && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
    c.columns = ws.ws_col;
    c.lines = ws.ws_row;
  } else if (const char* cols = std::getenv("COLUMNS"); cols != nullptr) {
    if (const auto n = parse_uint(cols, 20, 1000)) c.columns = static_cast<std::size_t>(*n);
  }
  return c;
}

}  // namespace joules::term
