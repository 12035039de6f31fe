#include "http/listen_socket.hpp"

#include <fmt/format.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <system_error>

#include "util/error.hpp"
#include "util/strings.hpp"

namespace joules::exporter::detail {
namespace {

std::string errno_text(int err) {
  return std::generic_category().message(err);
}

std::string hint_for(int err) {
  if (err == EADDRINUSE) return "; choose another port, or 0 for a free one";
  if (err == EACCES) return "; ports below 1024 need privileges, choose a higher one";
  if (err == EADDRNOTAVAIL) return "; the host is not an address of this machine";
  return "";
}

}  // namespace

void unique_fd::reset() {
  if (fd_ >= 0) {
    // No retry on EINTR: on Linux the descriptor is released even then, and a retry could
    // close one another thread has just been given.
    ::close(fd_);
    fd_ = -1;
  }
}

listening_socket listen_on(const listen_address& want) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(want.port);
  if (const int rc = ::getaddrinfo(want.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    throw usage_error(fmt::format("cannot listen on {}: {}", want.text(),
                                  rc == EAI_SYSTEM ? errno_text(errno) : ::gai_strerror(rc)));
  }
  const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, &::freeaddrinfo);
  int last_error = EADDRNOTAVAIL;
  for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    unique_fd fd(
        ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol));
    if (!fd) {
      last_error = errno;
      continue;
    }
    // A restarted exporter must get its port back while old connections sit in TIME_WAIT.
    const int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd.get(), SOMAXCONN) != 0) {
      last_error = errno;
      continue;
    }
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    char host[NI_MAXHOST] = {};
    char serv[NI_MAXSERV] = {};
    if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ss), &len) != 0 ||
        ::getnameinfo(reinterpret_cast<sockaddr*>(&ss), len, host, sizeof host, serv, sizeof serv,
                      NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
      last_error = errno;
      continue;
    }
    const auto bound_port = parse_uint(serv, 0, 65535);
    if (!bound_port) continue;
    return {std::move(fd), listen_address{host, static_cast<std::uint16_t>(*bound_port)}};
  }
  throw fatal_error(fmt::format("cannot listen on {}: {}{}", want.text(), errno_text(last_error),
                                hint_for(last_error)));
}

}  // namespace joules::exporter::detail
