#include "export/http_connection.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>

namespace joules::exporter::detail {
namespace {

constexpr std::size_t kReadChunk = 4096;

bool would_block(int err) {
  return err == EAGAIN || err == EWOULDBLOCK;
}

}  // namespace

io_status receive(connection& c, std::size_t max_bytes) {
  std::array<char, kReadChunk> buf{};
  for (;;) {
    const ssize_t n = ::recv(c.fd.get(), buf.data(), std::min(max_bytes, buf.size()), 0);
    if (n > 0) {
      c.in.append(buf.data(), static_cast<std::size_t>(n));
      return io_status::progress;
    }
    if (n == 0) return io_status::closed;
    if (errno != EINTR) return would_block(errno) ? io_status::would_block : io_status::failed;
  }
}

io_status send_pending(connection& c) {
  while (c.written < c.out.size()) {
    // MSG_NOSIGNAL: a client gone away is an EPIPE here, not a SIGPIPE for the whole process.
    const ssize_t n =
        ::send(c.fd.get(), c.out.data() + c.written, c.out.size() - c.written, MSG_NOSIGNAL);
    if (n >= 0) {
      c.written += static_cast<std::size_t>(n);
    } else if (errno != EINTR) {
      return would_block(errno) ? io_status::would_block : io_status::failed;
    }
  }
  return io_status::progress;
}

void start_lingering(connection& c, mono_time now, mono_time deadline) {
  ::shutdown(c.fd.get(), SHUT_WR);
  c.state = phase::lingering;
  c.deadline = deadline;
  c.waiting_since = now;
  c.in = {};  // frees the buffers: a lingering connection needs none
  c.out = {};
}

bool drain(connection& c, std::size_t max_bytes) {
  std::array<char, kReadChunk> buf{};
  for (;;) {
    const ssize_t n = ::recv(c.fd.get(), buf.data(), buf.size(), 0);
    if (n > 0) {
      c.lingered += static_cast<std::size_t>(n);
      if (c.lingered > max_bytes) return true;
    } else if (n == 0) {
      return true;
    } else if (errno != EINTR) {
      return !would_block(errno);
    }
  }
}

void refuse(int fd, std::string_view response) {
  [[maybe_unused]] const auto sent =
      ::send(fd, response.data(), response.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::shutdown(fd, SHUT_WR);
  std::array<char, kReadChunk> buf{};
  for (int i = 0; i < 4 && ::recv(fd, buf.data(), buf.size(), MSG_DONTWAIT) > 0; ++i) {
  }
}

}  // namespace joules::exporter::detail
