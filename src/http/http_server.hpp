#pragma once
// The HTTP server behind `/metrics`: one thread, poll() over non-blocking sockets, serving
//   GET|HEAD /metrics  the exposition, from a callback, as text format 0.0.4
//   GET|HEAD /         a short HTML page pointing at /metrics
//   anything else      404 (other paths) or 405 with `Allow: GET, HEAD` (other methods)
// It reads no files and copies nothing from a request into a response.
//
// Hardened for a port that anything on the network may reach:
//   - a request head is at most 8 KiB and 100 fields (431/414 otherwise); bodies are refused
//     (413), chunked ones included; anything malformed gets 400 and the connection is closed;
//   - a request must arrive whole within request_timeout of its first byte (or of the accept),
//     so a client sending a byte a second (slowloris) is dropped; idle keep-alive connections
//     within idle_timeout;
//   - responses are written without blocking and within write_timeout: a client that never
//     reads holds one response (a reference to the shared body, its own head and tail) and one
//     connection slot, and delays no one else;
//   - /metrics is gzip-encoded when the request accepts it (as Prometheus' does), at no
//     compression cost per scrape (the shared body is compressed once);
//   - a response goes out with one sendmsg() of head, shared body and tail; the socket's send
//     buffer is raised to the response's size where it is smaller, so that it usually fits;
//   - at most max_connections at once: beyond that one is closed to make room (one that has
//     had its last response, else an idle keep-alive one, else the one that has dribbled a
//     request the longest, for over a second), or else the new one gets a 503 and is closed
//     (connections_refused);
//   - keep-alive and pipelining are served one response at a time, in order, round-robin
//     between connections; `Connection: close` is honoured; after max_requests_per_connection
//     the connection is closed.
//
// Thread-safety: construct, start() and stop() from one thread; stats(), port(), address() and
// reload_web_config() from any thread.  The metrics_writer runs on the server thread only.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "http/http_request.hpp"
#include "http/listen_address.hpp"

namespace joules::exporter {

// What GET /metrics answers: a body shared by every scrape of the same readings (rendered once
// and sent from where it lies, never copied per scrape), then a tail of a few bytes made for this
// request (its own counters), appended by the writer to `tail`, which comes empty.  With gzip, body
// and tail together are one gzip member (gzip_member.hpp), sent with `Content-Encoding: gzip`.
struct metrics_request {
  bool scrape = true;  // false for HEAD: the head only, and not a scrape
  bool gzip = false;   // the client accepts gzip (Accept-Encoding)
};
struct metrics_body {
  std::shared_ptr<const std::string> shared;  // never null
  bool gzip = false;                          // shared + tail are gzip-encoded
  std::string_view content_type;              // of the format the writer wrote (static text)
};
// Runs on the server thread, one request at a time: it must serialise the sampler's latest
// snapshot (or reuse the body serialised from it) and never call hardware.  An exception from it
// is answered with 500.
using metrics_writer = std::function<metrics_body(std::string& tail, const metrics_request& r)>;

class tls_context;
class basic_auth;
class web_config_reloader;

struct http_server_options {
  listen_address address{std::string(kDefaultListenHost), 0};
  // serve --web-config-file (web_config.hpp): HTTPS when `tls` is set (the handshake must end
  // within request_timeout of the accept, as a request must); every request answered 401 with
  // `WWW-Authenticate: Basic` unless `auth` allows its credentials (a request whose credentials
  // are not cached waits, without reading more, for auth's bcrypt thread); `headers`, whole field
  // lines, added to every response.  Without them the server is plain HTTP and none of this costs a
  // thing.
  std::shared_ptr<const tls_context> tls{};
  std::shared_ptr<basic_auth> auth{};
  std::string headers{};
  // When given, the file these three come from (the server takes them from it), looked at again (at
  // most once a second, when a connection or a request comes) and read again when it has changed:
  // the server then takes its new tls, auth and headers (web_config_reload.hpp).  Used on the
  // server thread only once start() is called.
  std::shared_ptr<web_config_reloader> web_config{};
  std::size_t max_connections = 64;
  http::parser_limits limits{};
  std::chrono::milliseconds request_timeout{5000};  // whole head, from its first byte or accept
  std::chrono::milliseconds idle_timeout{30000};    // keep-alive wait for the next request
  std::chrono::milliseconds write_timeout{10000};   // whole response
  std::chrono::milliseconds linger_timeout{1000};   // after the last response, see http_server.cpp
  unsigned max_requests_per_connection = 1000;
};

struct http_server_stats {
  std::uint64_t scrapes_served = 0;  // GET /metrics answered (HEAD is not a scrape)
  std::uint64_t request_errors = 0;  // answered 4xx/5xx, or dropped mid-request (timeout, reset)
  std::uint64_t connections_accepted = 0;
  std::uint64_t connections_refused = 0;             // over max_connections with none idle to close
  std::chrono::nanoseconds last_scrape_duration{0};  // the metrics_writer's last call for a GET
};

class http_server {
 public:
  // Resolves and binds options.address and listens; port() is known from here on, and
  // connections queue until start().  Throws usage_error when the host does not resolve and
  // fatal_error when the address cannot be bound (in use, not permitted).
  http_server(http_server_options options, metrics_writer writer);
  ~http_server();  // stop()
  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  // Starts the server thread.
  void start();
  // Wakes the thread, closes every connection and joins it.  Idempotent.
  void stop();
  // Has the server thread read options.web_config again at once, changed or not (SIGHUP).  From
  // any thread; nothing without a web_config.
  void reload_web_config();

  std::uint16_t port() const;
  // The bound address, numeric, with the real port: "127.0.0.1:41234", "[::1]:41234".
  const listen_address& address() const;
  http_server_stats stats() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace joules::exporter
