#pragma once
// A minimal HTTP/1.1 client for OTLP pushes: one POST per connection (`Connection: close`), over
// POSIX sockets, with one deadline for the whole exchange (connect, send, response), so that a
// collector that accepts and then never answers costs at most the deadline.  Plain HTTP only:
// OTLP over TLS goes through a local collector (or a sidecar), which is how collectors are
// deployed next to jobs anyway.
//
// Written here rather than taken from cpp-httplib (Debian's libcpp-httplib-dev): what joules
// needs is ~150 lines, and httplib's timeouts apply per read and per write, not to the whole
// request, which is the bound the OTLP thread needs.
//
// Thread-safety: the functions are reentrant; an http_target is immutable once made.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <sys/socket.h>

namespace joules::exporter {

struct http_url {
  std::string host;  // without brackets
  std::uint16_t port = 80;
  std::string path = "/";  // with the query, if any

  // "host:port" as the Host header wants it ("[::1]:4318" for IPv6).
  std::string authority() const;
};

// Accepts `http://HOST[:PORT][/PATH]`; HOST a name, an IPv4 address or `[IPv6]`.  Throws
// usage_error naming `option` and the value; `https://` is refused with a pointer to a local
// collector.
http_url parse_http_url(std::string_view value, std::string_view option);

// An URL resolved once (at start, before any child runs: a name that does not resolve is an input
// error, not something to retry forever).
struct http_target {
  http_url url;
  std::vector<sockaddr_storage> addresses;
  std::vector<socklen_t> lengths;
};

// Throws usage_error when the host does not resolve.
http_target resolve_http_target(const http_url& url, std::string_view option);

struct http_result {
  int status = 0;     // 0 when no response came (error says why)
  std::string error;  // empty on a response
  bool ok() const { return status >= 200 && status < 300; }
};

// POSTs `body` and reads the response's status line, headers and body (discarded, at most
// 64 KiB), all before `timeout` has passed.  Never throws.
http_result http_post(const http_target& target, std::string_view content_type,
                      const std::vector<std::pair<std::string, std::string>>& headers,
                      std::string_view body, std::chrono::milliseconds timeout);

}  // namespace joules::exporter
