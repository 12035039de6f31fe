// The least a pass-through of a command's output costs: start CMD with its stdout on a
// pseudo-terminal (output processing off, as `joules wrap` sets it) or a pipe, read 64 KiB at a
// time, write what was read to our stdout, until the command has closed it.  Nothing else: no
// lines, no parsing.  Prints "BYTES SECONDS" (from the start of CMD to its end of output) on
// stderr.
//
//   passthrough_ceiling pty|pipe CMD [ARGS...]  > /dev/null

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <spawn.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

int main(int argc, char** argv) {
  if (argc < 3 || (std::string(argv[1]) != "pty" && std::string(argv[1]) != "pipe")) {
    std::fprintf(stderr, "usage: passthrough_ceiling pty|pipe CMD [ARGS...]\n");
    return 2;
  }
  const bool pty = std::string(argv[1]) == "pty";
  int read_fd = -1;
  int child_fd = -1;
  if (pty) {
    winsize ws{};
    ws.ws_col = 200;
    ws.ws_row = 50;
    if (openpty(&read_fd, &child_fd, nullptr, nullptr, &ws) != 0) return 1;
    termios t{};
    tcgetattr(child_fd, &t);
    t.c_oflag &= ~static_cast<tcflag_t>(OPOST);
    t.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    tcsetattr(child_fd, TCSANOW, &t);
  } else {
    int p[2];
    if (pipe(p) != 0) return 1;
    read_fd = p[0];
    child_fd = p[1];
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, child_fd, STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, read_fd);
  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = -1;
  if (posix_spawnp(&pid, argv[2], &actions, nullptr, argv + 2, environ) != 0) return 127;
  close(child_fd);
  std::vector<char> buf(64 * 1024);
  unsigned long long total = 0;
  while (true) {
    const ssize_t n = read(read_fd, buf.data(), buf.size());
    if (n <= 0) break;  // EOF, or EIO once the pty's last writer is gone
    total += static_cast<unsigned long long>(n);
    for (ssize_t off = 0; off < n;) {
      const ssize_t w = write(STDOUT_FILENO, buf.data() + off, static_cast<std::size_t>(n - off));
      if (w <= 0) break;
      off += w;
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int status = 0;
  waitpid(pid, &status, 0);
  std::fprintf(stderr, "%llu %.6f\n", total, s);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
