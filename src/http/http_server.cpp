#include "http/http_server.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <exception>
#include <stdexcept>
#include <stop_token>
#include <thread>
#include <vector>

#include "http/basic_auth.hpp"
#include "http/http_connection.hpp"
#include "http/http_response.hpp"
#include "http/listen_socket.hpp"
#include "http/tls_context.hpp"
#include "http/web_config_reload.hpp"
#include "util/clock.hpp"
#include "util/error.hpp"

namespace joules::exporter {
namespace {

using detail::connection;
using detail::io_status;
using detail::phase;
using detail::unique_fd;
using std::chrono::milliseconds;

// What a closing client may still send before it is cut off anyway (see phase::lingering).
constexpr std::size_t kMaxLingerBytes = 64 * 1024;
// Out of file descriptors, the listening socket stays readable and poll() would spin on it.
constexpr milliseconds kAcceptPause{100};
constexpr milliseconds kPollErrorPause{10};
// At the connection cap, a connection still waiting for its request after this long may be
// closed to make room; a younger one may just not have been read yet.
constexpr milliseconds kMinWaitToEvict{1000};
// poll()'s entries: the wake-up eventfd, the listener, basic auth's eventfd, then connections.
constexpr std::size_t kFirstConnection = 3;

// 5xx may go without Date (RFC 9110 §6.6.1), so this one is a constant, sent without waiting.
constexpr std::string_view kBusyResponse =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

int poll_timeout_ms(mono_time now, mono_time next) {
  if (next == mono_time::max()) return -1;
  if (next <= now) return 0;
  const auto ms = std::chrono::ceil<milliseconds>(next - now).count();
  return static_cast<int>(std::min<std::int64_t>(ms, INT_MAX));
}

}  // namespace

struct http_server::impl {
  http_server_options options;
  metrics_writer writer;
  detail::listening_socket listener;
  unique_fd wake;  // an eventfd: stop() and reload_web_config() write it to end poll()
  std::atomic<bool> reload_requested{false};
  std::vector<connection> conns;
  std::string date;
  std::int64_t date_second = -1;
  mono_time accept_paused_until{};
  std::atomic<std::uint64_t> scrapes{0}, errors{0}, accepted{0}, refused{0};
  std::atomic<std::int64_t> last_scrape_ns{0};
  std::jthread thread;

  void run(const std::stop_token& stop);
  void accept_all(mono_time now);
  bool evict_one(mono_time now);
  void on_events(connection& c, short revents, mono_time now);
  void handshake(connection& c, mono_time now);
  void credentials_checked();
  void refresh_web_config(mono_time now);
  void read_input(connection& c, mono_time now);
  bool try_serve(connection& c, mono_time now);
  void respond(connection& c, const http::request_head& head, bool authorized);
  void begin_write(connection& c, mono_time now);
  void flush(connection& c, mono_time now);
  void expire(mono_time now);
  void drop(connection& c, bool is_error) {
    if (is_error) ++errors;
    c.fd.reset();
  }
  std::string_view current_date();
};

void http_server::impl::run(const std::stop_token& stop) {
  std::vector<pollfd> fds;
  conns.reserve(options.max_connections);
  while (!stop.stop_requested()) {
    const mono_time now = steady::now();
    const bool accepting = now >= accept_paused_until;
    mono_time next = accepting ? mono_time::max() : accept_paused_until;
    bool any_ready = false;
    fds.clear();
    fds.push_back({wake.get(), POLLIN, 0});
    fds.push_back({accepting ? listener.fd.get() : -1, POLLIN, 0});  // poll() skips fd -1
    fds.push_back({options.auth ? options.auth->ready_fd() : -1, POLLIN, 0});
    for (const connection& c : conns) {
      fds.push_back({c.fd.get(), detail::poll_events(c), 0});
      next = std::min(next, c.deadline);
      any_ready = any_ready || c.ready;
    }
    const int n = ::poll(fds.data(), fds.size(), any_ready ? 0 : poll_timeout_ms(now, next));
    if (n < 0) {
      if (errno != EINTR) std::this_thread::sleep_for(kPollErrorPause);  // ENOMEM: back off
      continue;
    }
    if (fds[0].revents != 0) {
      std::uint64_t count = 0;
      [[maybe_unused]] const auto r = ::read(wake.get(), &count, sizeof count);
      if (stop.stop_requested()) break;
    }
    const mono_time after = steady::now();
    // Before new connections are accepted and requests checked: they get what is in force now.
    if (options.web_config) refresh_web_config(after);
    if ((fds[2].revents & POLLIN) != 0) credentials_checked();
    const std::size_t polled = conns.size();
    for (std::size_t i = 0; i < polled; ++i) {
      // A failure here (out of memory) costs one connection, never the process being measured.
      try {
        on_events(conns[i], fds[i + kFirstConnection].revents, after);
      } catch (const std::exception&) {
        drop(conns[i], true);
      }
    }
    expire(after);
    std::erase_if(conns, [](const connection& c) { return !c.fd; });
    if ((fds[1].revents & POLLIN) != 0) accept_all(after);
  }
  conns.clear();
}

void http_server::impl::on_events(connection& c, short revents, mono_time now) {
  if (c.auth_pending) {
    // Nothing is read until its credentials are checked; a client gone meanwhile (reported
    // whatever the events asked for) would make every poll() return at once.
    if ((revents & (POLLHUP | POLLERR)) != 0) drop(c, true);
    return;
  }
  if (c.ready && c.state == phase::reading) {
    c.ready = false;
    if (try_serve(c, now)) return;  // one request per round; more input waits for the next
    // TLS: the rest of a request may lie decrypted inside OpenSSL, where poll() cannot see it.
    if (c.tls && c.tls->pending()) {
      read_input(c, now);
      return;
    }
  }
  if (!c.fd || revents == 0) return;
  switch (c.state) {
    case phase::handshake:
      handshake(c, now);
      break;
    case phase::reading:
      read_input(c, now);
      break;
    case phase::writing:
      flush(c, now);
      break;
    case phase::lingering:
      if (detail::drain(c, kMaxLingerBytes)) drop(c, false);
      break;
  }
}

void http_server::impl::accept_all(mono_time now) {
  for (;;) {
    const int raw = ::accept4(listener.fd.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (raw < 0) {
      const int err = errno;
      // A connection that failed between SYN and accept is not our failure (accept(2) on Linux).
      if (err == EINTR || err == ECONNABORTED || err == EPROTO) continue;
      if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
        accept_paused_until = now + kAcceptPause;
      }
      return;
    }
    unique_fd fd(raw);
    ++accepted;
    if (conns.size() >= options.max_connections && !evict_one(now)) {
      ++refused;
      // A TLS client could not read a plain answer: it is only closed.
      if (!options.tls) detail::refuse(fd.get(), kBusyResponse);
      continue;
    }
    std::unique_ptr<tls_stream> tls;
    if (options.tls) {
      tls = options.tls->open(fd.get());
      if (!tls) {
        ++errors;
        continue;
      }
    }
    // Responses go out in one write; Nagle would only hold back the tail of a large one.
    const int one = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int send_buffer = 0;
    socklen_t len = sizeof send_buffer;
    ::getsockopt(fd.get(), SOL_SOCKET, SO_SNDBUF, &send_buffer, &len);
    connection& c = conns.emplace_back();
    c.send_buffer = static_cast<std::size_t>(std::max(send_buffer, 0));
    c.fd = std::move(fd);
    c.deadline = now + options.request_timeout;
    c.waiting_since = now;
    if (tls) {
      c.tls = std::move(tls);
      c.state = phase::handshake;
    }
  }
}

// The web configuration file, looked at again (its reloader says at most once a second), read
// again when it has changed or a reload is asked for; connections already set up keep their TLS
// session, requests from here on get the new users and headers.
void http_server::impl::refresh_web_config(mono_time now) {
  const bool force = reload_requested.exchange(false);
  try {
    if (!options.web_config->refresh(now, force)) return;
    options.tls = options.web_config->tls();
    options.auth = options.web_config->auth();
    options.headers = options.web_config->headers();
  } catch (const std::exception&) {
    // Out of memory while reading: the configuration in force stays, the server goes on.
  }
}

// Checks of credentials have finished on basic auth's thread: the requests that waited for them
// are parsed again in the next round, and answered from the cache.
void http_server::impl::credentials_checked() {
  options.auth->take_ready();
  for (connection& c : conns) {
    if (!c.auth_pending) continue;
    c.auth_pending = false;
    c.ready = true;
  }
}

// The TLS handshake, as far as the client's bytes allow.  A client that sends nothing, or
// dribbles its handshake, holds one connection slot until request_timeout (or until evicted,
// like a slow request) and delays no one: every call returns as soon as the socket would block.
void http_server::impl::handshake(connection& c, mono_time now) {
  switch (detail::continue_handshake(c)) {
    case io_status::progress:
      c.deadline = now + options.request_timeout;  // then the request, as on a new connection
      c.waiting_since = now;
      read_input(c, now);  // it may have come with the handshake's last flight
      break;
    case io_status::would_block:
      break;
    case io_status::closed:  // a port check, or a client that gave up: not an error
      drop(c, false);
      break;
    case io_status::failed:  // not TLS, or a client certificate refused
      drop(c, true);
      break;
  }
}

// Makes room for a new connection by closing, in this order of preference: one that has had its
// last response and is only lingering; an idle keep-alive one (HTTP lets a server close those
// at any time; the client reconnects); one that has dribbled part of a request for over
// kMinWaitToEvict.  Among equals, the one waiting longest.  So a flood of slow clients recycles
// its own slots instead of locking out a scraper that needs a millisecond.  Connections being
// written to are never closed for this.
bool http_server::impl::evict_one(mono_time now) {
  const auto rank = [](const connection& c) {
    if (c.state == phase::lingering) return 0;
    if (c.in.empty() && c.requests > 0) return 1;
    return 2;
  };
  auto victim = conns.end();
  for (auto it = conns.begin(); it != conns.end(); ++it) {
    if (it->state == phase::writing) continue;
    if (rank(*it) == 2 && now - it->waiting_since < kMinWaitToEvict) continue;
    if (victim == conns.end() ||
        std::pair(rank(*it), it->waiting_since) < std::pair(rank(*victim), victim->waiting_since)) {
      victim = it;
    }
  }
  if (victim == conns.end()) return false;
  if (victim->mid_request) ++errors;
  conns.erase(victim);
  return true;
}

void http_server::impl::read_input(connection& c, mono_time now) {
  while (c.state == phase::reading && c.fd && !c.ready) {
    const std::size_t max = options.limits.max_head_bytes;
    if (c.in.size() >= max) return;  // not reached: try_serve has answered a full buffer
    switch (detail::receive(c, max - c.in.size())) {
      case io_status::progress:
        if (!c.mid_request) {
          c.mid_request = true;
          c.deadline = now + options.request_timeout;
        }
        // One request per connection per round: a client that sends its next request as fast
        // as it reads the last must not keep the loop to itself.
        if (try_serve(c, now)) return;
        break;
      case io_status::would_block:
        return;
      case io_status::closed:  // the client closed, maybe halfway through a request
        drop(c, c.mid_request);
        return;
      case io_status::failed:
        drop(c, true);
        return;
    }
  }
}

// Answers the request at the front of `in`, if it is whole; says whether it was.
bool http_server::impl::try_serve(connection& c, mono_time now) {
  const http::parse_result r = http::parse_request(c.in, options.limits, &c.resume);
  if (r.status == http::parse_status::incomplete) return false;
  bool authorized = true;
  if (r.status == http::parse_status::complete && options.auth) {
    switch (options.auth->check(r.head.authorization)) {
      case basic_auth::verdict::allow:
        break;
      case basic_auth::verdict::deny:
        authorized = false;
        break;
      case basic_auth::verdict::pending:
        // bcrypt runs on its own thread; the request is parsed again once it is done.
        c.auth_pending = true;
        return true;
    }
  }
  detail::clear_response(c);
  if (r.status == http::parse_status::error) {
    ++errors;
    c.close_after = true;
    c.consumed = c.in.size();
    http::append_error_response(c.out, r.error_status, current_date(), false, options.headers);
  } else {
    c.consumed = r.consumed;
    ++c.requests;
    c.close_after = !r.head.keep_alive || c.requests >= options.max_requests_per_connection;
    respond(c, r.head, authorized);
  }
  begin_write(c, now);
  return true;
}

void http_server::impl::respond(connection& c, const http::request_head& head, bool authorized) {
  const bool head_only = head.method == "HEAD";
  // Every path needs the credentials, as with the exporter toolkit.
  if (!authorized) {
    ++errors;
    c.close_after = true;
    http::append_error_response(c.out, 401, current_date(), head_only, options.headers);
    return;
  }
  const http::route route = http::route_request(head);
  if (route == http::route::not_found || route == http::route::method_not_allowed) {
    ++errors;
    c.close_after = true;
    const int status = route == http::route::not_found ? 404 : 405;
    http::append_error_response(c.out, status, current_date(), head_only, options.headers);
    return;
  }
  http::response_head h;
  h.extra = options.headers;
  h.close = c.close_after;
  h.keep_alive = !c.close_after && head.version_minor == 0;
  if (route == http::route::index) {
    h.content_type = http::kIndexContentType;
    h.content_length = http::kIndexBody.size();
    http::append_response_head(c.out, h, current_date());
    if (!head_only) c.out += http::kIndexBody;
    return;
  }
  const mono_time t0 = steady::now();
  metrics_body body;
  try {
    body = writer(c.tail, metrics_request{!head_only, head.accepts_gzip});
    if (!body.shared) throw std::logic_error("no metrics");
  } catch (...) {
    // Nothing of the exception reaches the client; the error count tells the operator.
    ++errors;
    c.close_after = true;
    c.tail.clear();
    http::append_error_response(c.out, 500, current_date(), head_only, options.headers);
    return;
  }
  if (!head_only) {
    last_scrape_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now() - t0).count();
    ++scrapes;
  }
  h.content_type = body.content_type;
  h.content_length = body.shared->size() + c.tail.size();
  h.gzip = body.gzip;
  h.vary_accept_encoding = true;
  http::append_response_head(c.out, h, current_date());
  if (head_only) {
    c.tail.clear();
  } else {
    c.body = std::move(body.shared);  // shared: sent from where it lies
  }
}

void http_server::impl::begin_write(connection& c, mono_time now) {
  c.state = phase::writing;
  c.mid_request = false;  // the request is in; what can go wrong now is the response
  c.written = 0;
  c.deadline = now + options.write_timeout;
  detail::fit_send_buffer(c);
  flush(c, now);  // most responses fit the socket buffer: no need to wait for POLLOUT
}

void http_server::impl::flush(connection& c, mono_time now) {
  const io_status st = detail::send_pending(c);
  if (st == io_status::failed) drop(c, true);
  if (st != io_status::progress) return;
  if (c.close_after) {
    detail::start_lingering(c, now, now + options.linger_timeout);
    if (detail::drain(c, kMaxLingerBytes)) drop(c, false);
    return;
  }
  c.in.erase(0, c.consumed);
  c.consumed = 0;
  c.resume = 0;
  detail::clear_response(c);
  c.state = phase::reading;
  c.mid_request = !c.in.empty();
  c.deadline = now + (c.mid_request ? options.request_timeout : options.idle_timeout);
  c.waiting_since = now;
  // A pipelined request waits for the next round, so that one client cannot starve the others.
  c.ready = c.mid_request || (c.tls && c.tls->pending());
}

void http_server::impl::expire(mono_time now) {
  for (connection& c : conns) {
    if (!c.fd || now < c.deadline) continue;
    // Slow requests (slowloris) and responses nobody reads are errors; an idle keep-alive
    // connection or a lingering one simply ends.
    const bool is_error = c.state == phase::writing || (c.state == phase::reading && c.mid_request);
    drop(c, is_error);
  }
}

std::string_view http_server::impl::current_date() {
  const auto now = std::chrono::system_clock::now();
  const std::int64_t second =
      std::chrono::floor<std::chrono::seconds>(now).time_since_epoch().count();
  if (second != date_second) {
    date = http::http_date(now);
    date_second = second;
  }
  return date;
}

http_server::http_server(http_server_options options, metrics_writer writer)
    : impl_(std::make_unique<impl>()) {
  impl_->listener = detail::listen_on(options.address);
  if (options.web_config) {
    options.tls = options.web_config->tls();
    options.auth = options.web_config->auth();
    options.headers = options.web_config->headers();
  }
  impl_->options = std::move(options);
  impl_->writer = std::move(writer);
  impl_->wake = unique_fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!impl_->wake) throw fatal_error("cannot create the HTTP server's wake-up eventfd");
}

http_server::~http_server() {
  stop();
}

void http_server::start() {
  if (impl_->thread.joinable() || !impl_->listener.fd) return;
  impl_->thread = std::jthread([this](const std::stop_token& stop) { impl_->run(stop); });
}

void http_server::stop() {
  if (impl_->thread.joinable()) {
    impl_->thread.request_stop();
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(impl_->wake.get(), &one, sizeof one);
    impl_->thread.join();
  }
  impl_->listener.fd.reset();  // the port is free again once stop() returns
}

void http_server::reload_web_config() {
  impl_->reload_requested = true;
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(impl_->wake.get(), &one, sizeof one);
}

std::uint16_t http_server::port() const {
  return impl_->listener.address.port;
}

const listen_address& http_server::address() const {
  return impl_->listener.address;
}

http_server_stats http_server::stats() const {
  http_server_stats s;
  s.scrapes_served = impl_->scrapes.load();
  s.request_errors = impl_->errors.load();
  s.connections_accepted = impl_->accepted.load();
  s.connections_refused = impl_->refused.load();
  s.last_scrape_duration = std::chrono::nanoseconds(impl_->last_scrape_ns.load());
  return s;
}

}  // namespace joules::exporter
