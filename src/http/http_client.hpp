#pragma once
// The HTTP client of OTLP pushes (`--otlp URL`) and of the scrapes of inference servers'
// /metrics pages (`--tokens-from URL`), over libcurl: `http://` and `https://` (the
// system CA store, or only the CAs of a given file; a client certificate for mutual TLS),
// proxies from the environment as libcurl reads them (https_proxy/HTTPS_PROXY, http_proxy,
// all_proxy/ALL_PROXY, no_proxy/NO_PROXY; https://curl.se/libcurl/c/CURLOPT_PROXY.html), and one
// connection kept alive from request to request.
//
// One client is used by one thread at a time (the OTLP exporter's, a token source's); cut_off() may
// be called from any thread.  libcurl is loaded (http/curl_library.hpp) and initialised once per
// process, by the first client made.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/clock.hpp"

namespace joules::exporter {

struct http_url {
  bool https = false;
  std::string host;  // without brackets
  std::uint16_t port = 80;
  std::string path = "/";  // with the query, if any

  // "host:port" as the Host header wants it ("[::1]:4318" for IPv6).
  std::string authority() const;
  // The whole URL, as requested.
  std::string text() const;
  // Without the query (it may carry a token): for messages and records.
  std::string display() const;
};

// Accepts `http[s]://HOST[:PORT][/PATH]`; HOST a name, an IPv4 address or `[IPv6]`; the port is
// 80 or 443 unless given.  Throws usage_error naming `option` and the value.  Credentials in
// the URL (user@host) are refused: they belong in a header, which joules never prints.
http_url parse_http_url(std::string_view value, std::string_view option);

// True when the environment names a proxy libcurl could use for `url` (NO_PROXY not weighed):
// the collector's name may then resolve only at the proxy.
bool proxy_configured(const http_url& url);

// Throws usage_error naming `option` when the host does not resolve here (checked before any
// child runs: a typo is an input error, not something to retry for the whole run).
void check_resolves(const http_url& url, std::string_view option);

// `text` for a terminal: at most `max` bytes of it, every control and non-ASCII byte written as
// \xNN, "..." when cut.  For what the network sends (a collector's error body).
std::string printable_excerpt(std::string_view text, std::size_t max);

struct http_tls {
  std::string ca_file;      // PEM; empty: the system CA store
  std::string client_cert;  // PEM; with client_key, or both empty
  std::string client_key;   // PEM, unencrypted
};

struct http_result {
  int status = 0;           // 0 when no response came (error says why)
  bool transient = false;   // with status 0: sending again may work
  bool cut_off = false;     // with status 0: ended by cut_off()
  std::string error;        // curl's text, empty on a response
  std::string retry_after;  // the Retry-After header's value, if any
  std::string body;         // the response body's first bytes (up to 1 KiB; get(): its limit)
  bool too_large = false;   // get(): the body passed its limit, and the transfer was ended
  bool ok() const { return status >= 200 && status < 300; }
};

class http_client {
 public:
  // `headers` go with every request (the caller's Content-Type and Content-Encoding included).
  // Throws fatal_error when libcurl cannot be initialised.
  http_client(http_url url, http_tls tls, std::vector<std::pair<std::string, std::string>> headers);
  ~http_client();
  http_client(const http_client&) = delete;
  http_client& operator=(const http_client&) = delete;

  // POSTs `body` and waits for the whole response, at most `timeout` (`connect_timeout` of it
  // for the connection and the TLS handshake), and never past the cut-off.  Never throws.
  http_result post(std::string_view body, std::chrono::milliseconds timeout,
                   std::chrono::milliseconds connect_timeout);

  // GETs the URL and waits for the whole response, as post() does.  The body (decompressed when
  // the server sends gzip) is kept whole up to `max_body` bytes; a longer one ends the transfer
  // (status 0, too_large).  Never throws.
  http_result get(std::chrono::milliseconds timeout, std::chrono::milliseconds connect_timeout,
                  std::size_t max_body);

  // No request runs past `deadline`, the one in flight included (it ends at once when the
  // deadline has passed).  Any thread.
  void cut_off(mono_time deadline);

 private:
  struct handles;
  // Runs the request set up on the handle; fills `result`.
  void perform(http_result& result, std::chrono::milliseconds timeout,
               std::chrono::milliseconds connect_timeout);

  std::unique_ptr<handles> h_;
  std::atomic<std::int64_t> cut_off_ns_;  // steady clock
};

}  // namespace joules::exporter
