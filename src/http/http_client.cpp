#include "http/http_client.hpp"

#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>

#include "http/listen_socket.hpp"
#include "util/clock.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

namespace joules::exporter {
namespace {

using detail::unique_fd;

constexpr std::size_t kMaxResponse = 64 * 1024;

std::string errno_text(int e) {
  return std::strerror(e);
}

// Milliseconds left until `deadline` for poll(), at least 0.
int ms_left(mono_time deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 60000));
}

// Waits for `events` on fd; false on timeout or error (error says which).
bool wait_for(int fd, short events, mono_time deadline, std::string& error) {
  while (true) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, ms_left(deadline));
    if (n > 0) return true;
    if (n == 0) {
      error = "timed out";
      return false;
    }
    if (errno != EINTR) {
      error = errno_text(errno);
      return false;
    }
  }
}

unique_fd connect_to(const http_target& t, mono_time deadline, std::string& error) {
  error = "no address";
  for (std::size_t i = 0; i < t.addresses.size(); ++i) {
    const auto* sa = reinterpret_cast<const sockaddr*>(&t.addresses[i]);
    unique_fd fd(::socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) {
      error = errno_text(errno);
      continue;
    }
    if (::connect(fd.get(), sa, t.lengths[i]) != 0) {
      if (errno != EINPROGRESS) {
        error = fmt::format("connect: {}", errno_text(errno));
        continue;
      }
      if (!wait_for(fd.get(), POLLOUT, deadline, error)) {
        error = "connect: " + error;
        continue;
      }
      int so_error = 0;
      socklen_t len = sizeof so_error;
      ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &len);
      if (so_error != 0) {
        error = fmt::format("connect: {}", errno_text(so_error));
        continue;
      }
    }
    return fd;
  }
  return unique_fd{};
}

bool send_all(int fd, std::string_view data, mono_time deadline, std::string& error) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_for(fd, POLLOUT, deadline, error)) {
        error = "send: " + error;
        return false;
      }
      continue;
    }
    error = fmt::format("send: {}", errno_text(errno));
    return false;
  }
  return true;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// "HTTP/1.1 503 Service Unavailable" -> 503.
std::optional<int> status_of(std::string_view head) {
  if (head.size() < 12 || head.substr(0, 7) != "HTTP/1.") return std::nullopt;
  const auto code = parse_uint(head.substr(9, 3), 100, 599);
  return code ? std::optional<int>(static_cast<int>(*code)) : std::nullopt;
}

std::optional<std::size_t> content_length(std::string_view head) {
  std::size_t pos = 0;
  while ((pos = head.find("\r\n", pos)) != std::string_view::npos) {
    pos += 2;
    const std::size_t end = head.find("\r\n", pos);
    const std::string_view line = head.substr(pos, end == std::string_view::npos ? end : end - pos);
    const std::size_t colon = line.find(':');
    if (colon != std::string_view::npos && iequals(trim(line.substr(0, colon)), "content-length")) {
      const auto n = parse_uint(trim(line.substr(colon + 1)), 0, kMaxResponse);
      if (n) return static_cast<std::size_t>(*n);
    }
  }
  return std::nullopt;
}

}  // namespace

std::string http_url::authority() const {
  const bool v6 = host.find(':') != std::string::npos;
  return v6 ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

http_url parse_http_url(std::string_view value, std::string_view option) {
  const auto bad = [&](std::string_view why) {
    return usage_error(fmt::format(
        "{} '{}': {}; expected http://HOST[:PORT][/PATH], e.g. http://127.0.0.1:4318/v1/metrics",
        option, value, why));
  };
  if (value.substr(0, 8) == "https://") {
    throw bad("https is not supported; send to a local OpenTelemetry collector over http");
  }
  if (value.substr(0, 7) != "http://") throw bad("not an http:// URL");
  std::string_view rest = value.substr(7);
  const std::size_t slash = rest.find('/');
  const std::string_view authority = rest.substr(0, slash);
  http_url url;
  url.path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) throw bad("unclosed [");
    url.host = std::string(authority.substr(1, close - 1));
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') throw bad("expected :PORT after ]");
      port_text = after.substr(1);
    }
  } else {
    const std::size_t colon = authority.rfind(':');
    url.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
  }
  if (url.host.empty()) throw bad("no host");
  if (url.host.find('@') != std::string::npos) throw bad("credentials belong in --otlp-header");
  if (!port_text.empty() || authority.find(':') != std::string_view::npos) {
    const auto port = parse_uint(port_text, 1, 65535);
    if (!port) throw bad("the port must be 1 to 65535");
    url.port = static_cast<std::uint16_t>(*port);
  }
  for (char c : url.path) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 127)
      throw bad("spaces or controls in the path");
  }
  return url;
}

http_target resolve_http_target(const http_url& url, std::string_view option) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(url.port);
  if (const int rc = ::getaddrinfo(url.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    throw usage_error(fmt::format("{}: cannot resolve {}: {}", option, url.host,
                                  rc == EAI_SYSTEM ? errno_text(errno) : ::gai_strerror(rc)));
  }
  const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, &::freeaddrinfo);
  http_target t;
  t.url = url;
  for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    sockaddr_storage ss{};
    std::memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
    t.addresses.push_back(ss);
    t.lengths.push_back(ai->ai_addrlen);
  }
  return t;
}

http_result http_post(const http_target& target, std::string_view content_type,
                      const std::vector<std::pair<std::string, std::string>>& headers,
                      std::string_view body, std::chrono::milliseconds timeout) {
  const mono_time deadline = steady::now() + timeout;
  http_result result;
  unique_fd fd = connect_to(target, deadline, result.error);
  if (!fd) return result;
  std::string head = fmt::format(
      "POST {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: joules/{}\r\nContent-Type: {}\r\n"
      "Content-Length: {}\r\nConnection: close\r\n",
      target.url.path, target.url.authority(), JOULES_VERSION, content_type, body.size());
  for (const auto& [k, v] : headers)
    head += fmt::format("{}: {}\r\n", k, v);
  head += "\r\n";
  if (!send_all(fd.get(), head, deadline, result.error) ||
      !send_all(fd.get(), body, deadline, result.error)) {
    return result;
  }

  std::string in;
  std::optional<std::size_t> head_end;
  std::optional<std::size_t> length;
  std::array<char, 4096> buf{};
  while (true) {
    if (head_end && length && in.size() >= *head_end + *length) break;
    if (in.size() > kMaxResponse + 8192) break;
    std::string error;
    if (!wait_for(fd.get(), POLLIN, deadline, error)) {
      if (!head_end) result.error = "waiting for the response: " + error;
      break;
    }
    const ssize_t n = ::recv(fd.get(), buf.data(), buf.size(), 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      if (!head_end)
        result.error = n == 0 ? "connection closed before a response" : errno_text(errno);
      break;
    }
    in.append(buf.data(), static_cast<std::size_t>(n));
    if (!head_end) {
      const std::size_t end = in.find("\r\n\r\n");
      if (end != std::string::npos) {
        head_end = end + 4;
        length = content_length(std::string_view(in).substr(0, end));
      }
    }
  }
  if (!head_end) return result;
  const auto status = status_of(in);
  if (!status) {
    result.error = "not an HTTP response";
    return result;
  }
  result.status = *status;
  result.error.clear();
  return result;
}

}  // namespace joules::exporter
