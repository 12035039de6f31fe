#pragma once
// Sockets for http_server: an owning file descriptor and the listening socket.  Internal to
// src/export.

#include <utility>

#include "http/listen_address.hpp"

namespace joules::exporter::detail {

// Owns a file descriptor; closes it once.
class unique_fd {
 public:
  unique_fd() = default;
  explicit unique_fd(int fd) : fd_(fd) {}
  ~unique_fd() { reset(); }
  unique_fd(unique_fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  unique_fd& operator=(unique_fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  void reset();

 private:
  int fd_ = -1;
};

struct listening_socket {
  unique_fd fd;            // non-blocking, close-on-exec
  listen_address address;  // numeric host, real port
};

// Resolves `want` and listens on the first of its addresses that binds.  Throws usage_error
// when the host does not resolve and fatal_error when nothing binds.
listening_socket listen_on(const listen_address& want);

}  // namespace joules::exporter::detail
