#include "proc/pty.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <pty.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.hpp"

namespace joules {
namespace {

winsize size_of(int fd) {
  winsize ws{};
  if (isatty(fd) == 0 || ioctl(fd, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0) {
    // Not a terminal: wide enough that progress bars do not wrap.
    ws.ws_col = 200;
    ws.ws_row = 50;
  }
  return ws;
}

}  // namespace

pty_pair::pty_pair(int size_from_fd) {
  winsize ws = size_of(size_from_fd);
  if (openpty(&master_, &slave_, nullptr, nullptr, &ws) != 0) {
    throw fatal_error(fmt::format(
        "cannot open a pseudo-terminal for the command: {} (try --no-pty)", std::strerror(errno)));
  }
  termios t{};
  if (tcgetattr(slave_, &t) == 0) {
    t.c_oflag &= ~static_cast<tcflag_t>(OPOST);  // bytes out exactly as written
    t.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    tcsetattr(slave_, TCSANOW, &t);
  }
  fcntl(master_, F_SETFD, FD_CLOEXEC);
  fcntl(slave_, F_SETFD, FD_CLOEXEC);
}

pty_pair::~pty_pair() {
  if (master_ >= 0) close(master_);
  if (slave_ >= 0) close(slave_);
}

void pty_pair::close_slave() {
  if (slave_ >= 0) close(slave_);
  slave_ = -1;
}

bool pty_pair::resize_from(int fd) {
  winsize ws = size_of(fd);
  winsize now{};
  if (ioctl(master_, TIOCGWINSZ, &now) == 0 && now.ws_col == ws.ws_col && now.ws_row == ws.ws_row &&
      now.ws_xpixel == ws.ws_xpixel && now.ws_ypixel == ws.ws_ypixel) {
    return false;
  }
  ioctl(master_, TIOCSWINSZ, &ws);
  return true;
}

}  // namespace joules
