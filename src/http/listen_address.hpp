#pragma once
// The `[HOST:]PORT` value of --listen and --prometheus.  Pure: the host is resolved and bound by
// http_server.

#include <cstdint>
#include <string>
#include <string_view>

namespace joules::exporter {

// Loopback unless the user names a host: metrics can say what runs on a machine.
inline constexpr std::string_view kDefaultListenHost = "127.0.0.1";

struct listen_address {
  std::string host;        // without brackets: "127.0.0.1", "::1", "localhost", "0.0.0.0"
  std::uint16_t port = 0;  // 0: the system picks a free port

  // "127.0.0.1:9400", "[::1]:9400".
  std::string text() const;
};

// Accepts `PORT`, `HOST:PORT` (a name or an IPv4 address) and `[IPV6]:PORT`, PORT being 0 to
// 65535.  Throws usage_error with one line naming `option`, the value and what is accepted; an
// empty host (`:9400`, which means every interface to Go programs such as dcgm-exporter) is
// refused rather than guessed, and the message says how to ask for every interface.
listen_address parse_listen_address(std::string_view value, std::string_view option = "--listen");

}  // namespace joules::exporter
