#include "monitor/terminal.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "util/error.hpp"

namespace joules::monitor {
namespace {

// xterm's private modes, understood by every terminal emulator in use and by tmux and screen.
constexpr std::string_view kEnter = "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J";  // alt screen, hide cursor
constexpr std::string_view kLeave = "\x1b[0m\x1b[?25h\x1b[?1049l";  // show cursor, main screen

// How long the rest of an escape sequence may take to arrive (a slow SSH link can split one
// between reads) before an ESC is taken for the Esc key, as vim's and htop's key delay.
constexpr int kEscapeWaitMs = 25;

sigset_t event_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH})
    sigaddset(&set, s);
  return set;
}

}  // namespace

bool write_stdout(std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(STDOUT_FILENO, text.data(), text.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

terminal_size size_of_stdout() {
  terminal_size s;
  winsize ws{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
    s.columns = ws.ws_col;
    s.lines = ws.ws_row;
  }
  return s;
}

event_source::event_source(bool keys) : keys_(keys) {
  // Blocked already in every thread (app::main); blocking again here makes the class safe to
  // use on its own, in tests.
  const sigset_t set = event_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal_fd_ = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signal_fd_ < 0) throw fatal_error(fmt::format("signalfd: {}", std::strerror(errno)));
}

event_source::~event_source() {
  if (signal_fd_ >= 0) close(signal_fd_);
}

event_source::event event_source::wait(mono_time deadline) {
  while (true) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - steady::now());
    if (left.count() <= 0) return {};
    pollfd fds[2] = {{signal_fd_, POLLIN, 0}, {STDIN_FILENO, POLLIN, 0}};
    const int n = poll(fds, keys_ ? 2 : 1, static_cast<int>(left.count()));
    if (n < 0) {
      if (errno == EINTR) continue;
      return {};
    }
    if (n == 0) continue;  // re-check the deadline: poll's timeout is only milliseconds
    if ((fds[0].revents & POLLIN) != 0) {
      signalfd_siginfo info{};
      if (read(signal_fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
        const auto sig = static_cast<int>(info.ssi_signo);
        if (sig == SIGWINCH) return {kind::resize, sig, {}};
        return {kind::signal, sig, {}};
      }
    }
    if (keys_ && (fds[1].revents & (POLLIN | POLLHUP)) != 0) {
      char buf[64];
      const ssize_t got = read(STDIN_FILENO, buf, sizeof buf);
      if (got <= 0) {
        keys_ = false;  // stdin closed: signals still end the loop
        continue;
      }
      std::string bytes(buf, static_cast<std::size_t>(got));
      while (bytes.size() < 256 && incomplete_escape(bytes)) {
        pollfd more{STDIN_FILENO, POLLIN, 0};
        if (poll(&more, 1, kEscapeWaitMs) <= 0) break;
        const ssize_t rest = read(STDIN_FILENO, buf, sizeof buf);
        if (rest <= 0) break;
        bytes.append(buf, static_cast<std::size_t>(rest));
      }
      auto keys = decode_keys(bytes);
      if (!keys.empty()) return {kind::keys, 0, std::move(keys)};
    }
  }
}

screen_session::screen_session() {
  enter();
}

screen_session::~screen_session() {
  leave();
}

void screen_session::enter() {
  if (isatty(STDIN_FILENO) != 0) {
    termios t{};
    if (tcgetattr(STDIN_FILENO, &t) == 0) {
      saved_ = t;
      // Raw input: byte by byte, no echo, no line editing, no signals from keys (they arrive as
      // bytes, so Ctrl-C restores the terminal through the normal exit).  Output processing
      // stays on, so "\n" still returns the carriage.
      t.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO | ISIG | IEXTEN);
      t.c_iflag &= ~static_cast<tcflag_t>(IXON | ICRNL);
      t.c_cc[VMIN] = 1;
      t.c_cc[VTIME] = 0;
      tcsetattr(STDIN_FILENO, TCSAFLUSH, &t);
    }
  }
  write_stdout(kEnter);
  entered_ = true;
}

void screen_session::leave() {
  if (!entered_) return;
  write_stdout(kLeave);
  if (saved_) tcsetattr(STDIN_FILENO, TCSAFLUSH, &*saved_);
  entered_ = false;
}

void screen_session::suspend() {
  leave();
  // SIGTSTP is not among the blocked signals: its default action stops the whole process here,
  // and execution resumes after raise() when the shell continues it.
  raise(SIGTSTP);
  enter();
}

void screen_session::draw(const std::vector<std::string>& frame, bool clear_first) {
  std::string out;
  out.reserve(8192);
  if (clear_first) out += "\x1b[2J";
  out += "\x1b[H";
  for (std::size_t i = 0; i < frame.size(); ++i) {
    out += frame[i];
    out += "\x1b[K";  // erase what the previous frame left to the right
    if (i + 1 < frame.size()) out += "\r\n";
  }
  out += "\x1b[J";  // and below
  write_stdout(out);
}

}  // namespace joules::monitor
