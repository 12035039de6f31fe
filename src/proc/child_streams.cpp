#include "proc/child_streams.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.hpp"

namespace joules {

bool same_file(int a, int b) {
  struct stat sa {};
  struct stat sb {};
  if (fstat(a, &sa) != 0 || fstat(b, &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

child_streams::child_streams(bool use_pty) : use_pty_(use_pty) {
  const bool shared = same_file(STDOUT_FILENO, STDERR_FILENO);
  auto add = [&](child_stream stream, int destination, bool pty) {
    source& s = sources_.emplace_back();
    s.stream = stream;
    s.destination = destination;
    if (pty) {
      s.pty.emplace(destination);
      s.fd = s.pty->master();
    } else {
      std::array<int, 2> p{-1, -1};
      if (pipe2(p.data(), O_CLOEXEC) != 0)
        throw fatal_error(fmt::format("pipe: {}", std::strerror(errno)));
      s.fd = p[0];
      child_ends_.push_back(p[1]);
    }
    fcntl(s.fd, F_SETFL, fcntl(s.fd, F_GETFL) | O_NONBLOCK);
  };
  add(child_stream::out, STDOUT_FILENO, use_pty);
  if (!shared) add(child_stream::err, STDERR_FILENO, use_pty && isatty(STDERR_FILENO) != 0);
}

child_streams::~child_streams() {
  for (auto& s : sources_) {
    if (!s.pty && s.fd >= 0) close(s.fd);
  }
  close_child_ends();
}

std::vector<std::pair<int, int>> child_streams::child_fds() const {
  std::vector<std::pair<int, int>> out;
  std::size_t pipe = 0;
  for (const auto& s : sources_) {
    const int ours = s.pty ? s.pty->slave() : child_ends_.at(pipe++);
    if (shared()) {
      out.emplace_back(ours, STDOUT_FILENO);
      out.emplace_back(ours, STDERR_FILENO);
    } else {
      out.emplace_back(ours, s.stream == child_stream::err ? STDERR_FILENO : STDOUT_FILENO);
    }
  }
  return out;
}

void child_streams::close_child_ends() {
  for (auto& s : sources_) {
    if (s.pty) s.pty->close_slave();
  }
  for (const int fd : child_ends_)
    close(fd);
  child_ends_.clear();
}

bool child_streams::resize() {
  bool changed = false;
  for (auto& s : sources_) {
    if (s.pty && s.pty->resize_from(s.destination)) changed = true;
  }
  return changed;
}

}  // namespace joules
