#include "http/listen_address.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "util/error.hpp"
#include "util/strings.hpp"

namespace joules::exporter {
namespace {

bool is_hostname_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-' || c == '_';
}

// Hex digits, colons and dots (an embedded IPv4), then an optional %zone: the resolver decides
// the rest when the server binds.
bool looks_like_ipv6(std::string_view s) {
  const std::size_t pct = s.find('%');
  const std::string_view addr = s.substr(0, pct);
  if (addr.find(':') == std::string_view::npos) return false;
  const bool addr_ok = std::all_of(addr.begin(), addr.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' ||
           c == '.';
  });
  if (pct == std::string_view::npos) return addr_ok;
  const std::string_view zone = s.substr(pct + 1);
  return addr_ok && !zone.empty() && std::all_of(zone.begin(), zone.end(), is_hostname_char);
}

}  // namespace

std::string listen_address::text() const {
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

listen_address parse_listen_address(std::string_view value, std::string_view option) {
  const auto bad = [&](std::string_view why) {
    return usage_error(fmt::format(
        "{} '{}': {}expected PORT, HOST:PORT or [IPV6]:PORT with PORT from 0 to 65535 (0 picks a "
        "free port)",
        option, value, why));
  };
  std::string_view host = kDefaultListenHost;
  std::string_view port_text = value;
  if (value.starts_with('[')) {
    const std::size_t close = value.find(']');
    if (close == std::string_view::npos || value.substr(close + 1, 1) != ":") throw bad("");
    host = value.substr(1, close - 1);
    port_text = value.substr(close + 2);
    if (!looks_like_ipv6(host)) throw bad("the address in brackets is not IPv6; ");
  } else if (const std::size_t colon = value.rfind(':'); colon != std::string_view::npos) {
    host = value.substr(0, colon);
    port_text = value.substr(colon + 1);
    if (host.empty()) throw bad("no host; for every interface say 0.0.0.0:PORT or [::]:PORT; ");
    if (host.find(':') != std::string_view::npos) throw bad("put an IPv6 address in brackets; ");
    if (!std::all_of(host.begin(), host.end(), is_hostname_char)) throw bad("");
  }
  // At most 5 digits: parse_uint alone would take "000000009400".
  const auto port = port_text.size() <= 5 ? parse_uint(port_text, 0, 65535) : std::nullopt;
  if (!port) throw bad("");
  return {std::string(host), static_cast<std::uint16_t>(*port)};
}

}  // namespace joules::exporter
