#include "http/http_connection.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <string_view>

namespace joules::exporter::detail {
namespace {

constexpr std::size_t kReadChunk = 4096;

bool would_block(int err) {
  return err == EAGAIN || err == EWOULDBLOCK;
}

io_status tls_io_status(connection& c, tls_result r) {
  c.tls_wait = r == tls_result::want_write ? POLLOUT : r == tls_result::want_read ? POLLIN : 0;
  switch (r) {
    case tls_result::done:
      return io_status::progress;
    case tls_result::want_read:
    case tls_result::want_write:
      return io_status::would_block;
    case tls_result::closed:
      return io_status::closed;
    case tls_result::failed:
      break;
  }
  return io_status::failed;
}

io_status receive_tls(connection& c, std::size_t max_bytes) {
  std::array<char, kReadChunk> buf{};
  std::size_t n = 0;
  const io_status st =
      tls_io_status(c, c.tls->read(buf.data(), std::min(max_bytes, buf.size()), n));
  if (st == io_status::progress) c.in.append(buf.data(), n);
  return st;
}

io_status send_pending_tls(connection& c) {
  const std::array<std::string_view, 3> parts = {
      c.out, c.body ? std::string_view(*c.body) : std::string_view(), c.tail};
  const std::size_t total = response_size(c);
  while (c.written < total) {
    std::size_t skip = c.written;
    std::string_view part;
    for (const std::string_view p : parts) {
      if (skip < p.size()) {
        part = p.substr(skip);
        break;
      }
      skip -= p.size();
    }
    std::size_t sent = 0;
    const io_status st = tls_io_status(c, c.tls->write(part.data(), part.size(), sent));
    if (st != io_status::progress) return st == io_status::closed ? io_status::failed : st;
    c.written += sent;
  }
  return io_status::progress;
}

}  // namespace

short poll_events(const connection& c) {
  if (c.auth_pending) return 0;  // POLLHUP and POLLERR are still reported, and ignored
  // OpenSSL may need to read while writing a response, or write while reading a request.
  if (c.tls && c.state != phase::lingering && c.tls_wait != 0) return c.tls_wait;
  return c.state == phase::writing ? POLLOUT : POLLIN;
}

io_status continue_handshake(connection& c) {
  const io_status st = tls_io_status(c, c.tls->handshake());
  if (st == io_status::progress) c.state = phase::reading;
  return st == io_status::closed ? io_status::failed : st;
}

io_status receive(connection& c, std::size_t max_bytes) {
  if (c.tls) return receive_tls(c, max_bytes);
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

std::size_t response_size(const connection& c) {
  return c.out.size() + (c.body ? c.body->size() : 0) + c.tail.size();
}

void fit_send_buffer(connection& c) {
  const std::size_t want = response_size(c);
  if (want <= c.send_buffer || want > INT_MAX) return;
  // The kernel doubles the value asked for (for its bookkeeping) and caps it at wmem_max; ask
  // for the response's size, and read back what was granted so as not to ask again.
  const int size = static_cast<int>(want);
  ::setsockopt(c.fd.get(), SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
  int granted = 0;
  socklen_t len = sizeof granted;
  if (::getsockopt(c.fd.get(), SOL_SOCKET, SO_SNDBUF, &granted, &len) == 0 && granted > 0) {
    c.send_buffer = std::max(want, static_cast<std::size_t>(granted));  // never asked again
  }
}

io_status send_pending(connection& c) {
  if (c.tls) return send_pending_tls(c);
  const std::array<std::string_view, 3> parts = {
      c.out, c.body ? std::string_view(*c.body) : std::string_view(), c.tail};
  const std::size_t total = response_size(c);
  while (c.written < total) {
    std::array<iovec, 3> iov{};
    std::size_t n = 0;
    std::size_t skip = c.written;
    for (const std::string_view part : parts) {
      if (skip >= part.size()) {
        skip -= part.size();
        continue;
      }
      // iovec is a C struct with a non-const pointer; sendmsg() only reads through it.
      iov[n++] = {const_cast<char*>(part.data() + skip), part.size() - skip};
      skip = 0;
    }
    msghdr msg{};
    msg.msg_iov = iov.data();
    msg.msg_iovlen = n;
    // MSG_NOSIGNAL: a client gone away is an EPIPE here, not a SIGPIPE for the whole process.
    const ssize_t sent = ::sendmsg(c.fd.get(), &msg, MSG_NOSIGNAL);
    if (sent >= 0) {
      c.written += static_cast<std::size_t>(sent);
    } else if (errno != EINTR) {
      return would_block(errno) ? io_status::would_block : io_status::failed;
    }
  }
  return io_status::progress;
}

void clear_response(connection& c) {
  c.out.clear();
  c.body.reset();
  c.tail.clear();
  c.written = 0;
}

void start_lingering(connection& c, mono_time now, mono_time deadline) {
  if (c.tls) c.tls->close_notify();  // then what the client sends is read raw and dropped
  ::shutdown(c.fd.get(), SHUT_WR);
  c.state = phase::lingering;
  c.deadline = deadline;
  c.waiting_since = now;
  c.in = {};  // frees the buffers: a lingering connection needs none
  c.out = {};
  c.body.reset();
  c.tail = {};
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
