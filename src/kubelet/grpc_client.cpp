#include "kubelet/grpc_client.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

namespace joules::kubelet {
namespace {

using grpc_clock = std::chrono::steady_clock;

// The state of the one stream of a call, shared with nghttp2's callbacks.
struct grpc_call_state {
  std::int32_t stream = -1;
  std::string request;  // gRPC prefix + message
  std::size_t sent = 0;
  std::string body;
  std::size_t max_body = 0;
  std::string http_status;
  std::string grpc_status;
  std::string grpc_message;
  bool closed = false;
  bool too_big = false;
  std::uint32_t close_code = 0;
};

ssize_t grpc_read_request(nghttp2_session*, std::int32_t, std::uint8_t* buf, std::size_t length,
                          std::uint32_t* flags, nghttp2_data_source*, void* user) {
  auto* c = static_cast<grpc_call_state*>(user);
  const std::size_t n = std::min(length, c->request.size() - c->sent);
  std::memcpy(buf, c->request.data() + c->sent, n);
  c->sent += n;
  if (c->sent == c->request.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

int grpc_on_data(nghttp2_session*, std::uint8_t, std::int32_t stream, const std::uint8_t* data,
                 std::size_t len, void* user) {
  auto* c = static_cast<grpc_call_state*>(user);
  if (stream != c->stream) return 0;
  if (len > c->max_body - std::min(c->max_body, c->body.size())) {
    c->too_big = true;
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  c->body.append(reinterpret_cast<const char*>(data), len);
  return 0;
}

int grpc_on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                   std::size_t namelen, const std::uint8_t* value, std::size_t valuelen,
                   std::uint8_t, void* user) {
  auto* c = static_cast<grpc_call_state*>(user);
  if (frame->hd.stream_id != c->stream) return 0;
  const std::string_view n(reinterpret_cast<const char*>(name), namelen);
  const std::string_view v(reinterpret_cast<const char*>(value),
                           std::min<std::size_t>(valuelen, 512));
  if (n == ":status") c->http_status = v;
  if (n == "grpc-status") c->grpc_status = v;
  if (n == "grpc-message") c->grpc_message = v;
  return 0;
}

int grpc_on_close(nghttp2_session*, std::int32_t stream, std::uint32_t code, void* user) {
  auto* c = static_cast<grpc_call_state*>(user);
  if (stream == c->stream) {
    c->closed = true;
    c->close_code = code;
  }
  return 0;
}

int grpc_remaining_ms(grpc_clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - grpc_clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 60000));
}

// Connects a non-blocking Unix socket by `deadline`; returns the descriptor or -1 with `error`.
int grpc_connect(const std::string& path, grpc_clock::time_point deadline, std::string& error) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    error = "the socket path is too long";
    return -1;
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = fmt::format("socket: {}", std::strerror(errno));
    return -1;
  }
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) return fd;
  if (errno == EINPROGRESS || errno == EAGAIN) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, grpc_remaining_ms(deadline)) == 1) {
      int err = 0;
      socklen_t len = sizeof err;
      if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) return fd;
      errno = err;
    } else {
      errno = ETIMEDOUT;
    }
  }
  error = fmt::format("cannot connect: {}", std::strerror(errno));
  ::close(fd);
  return -1;
}

// Writes what nghttp2 has to send; false on an error or past `deadline`.
bool grpc_flush(nghttp2_session* s, int fd, grpc_clock::time_point deadline, std::string& error) {
  while (true) {
    const std::uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(s, &data);
    if (n < 0) {
      error = fmt::format("HTTP/2: {}", nghttp2_strerror(static_cast<int>(n)));
      return false;
    }
    if (n == 0) return true;
    std::size_t off = 0;
    while (off < static_cast<std::size_t>(n)) {
      const ssize_t w = ::send(fd, data + off, static_cast<std::size_t>(n) - off, MSG_NOSIGNAL);
      if (w > 0) {
        off += static_cast<std::size_t>(w);
        continue;
      }
      if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        pollfd p{fd, POLLOUT, 0};
        if (::poll(&p, 1, grpc_remaining_ms(deadline)) <= 0) {
          error = "timed out writing the request";
          return false;
        }
        continue;
      }
      error = fmt::format("send: {}", std::strerror(errno));
      return false;
    }
  }
}

grpc_result grpc_exchange(nghttp2_session* s, int fd, grpc_call_state& c, std::string_view method,
                          grpc_clock::time_point deadline) {
  grpc_result out;
  nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1},
                                       {NGHTTP2_SETTINGS_ENABLE_PUSH, 0}};
  if (nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, settings, 2) != 0) {
    out.error = "HTTP/2: cannot submit SETTINGS";
    return out;
  }
  const std::string path(method);
  const auto nv = [](const char* n, const std::string& v) {
    return nghttp2_nv{reinterpret_cast<std::uint8_t*>(const_cast<char*>(n)),
                      reinterpret_cast<std::uint8_t*>(const_cast<char*>(v.data())), std::strlen(n),
                      v.size(), NGHTTP2_NV_FLAG_NONE};
  };
  const std::string post = "POST", http = "http", authority = "localhost",
                    grpc = "application/grpc", te = "trailers";
  const nghttp2_nv headers[] = {nv(":method", post),      nv(":scheme", http),
                                nv(":path", path),        nv(":authority", authority),
                                nv("content-type", grpc), nv("te", te)};
  nghttp2_data_provider provider{};
  provider.read_callback = grpc_read_request;
  c.stream = nghttp2_submit_request(s, nullptr, headers, std::size(headers), &provider, &c);
  if (c.stream < 0) {
    out.error = fmt::format("HTTP/2: {}", nghttp2_strerror(c.stream));
    return out;
  }
  char buf[16384];
  while (!c.closed) {
    if (!grpc_flush(s, fd, deadline, out.error)) return out;
    if (c.closed) break;
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, grpc_remaining_ms(deadline));
    if (ready == 0) {
      out.error = "timed out waiting for the reply";
      return out;
    }
    if (ready < 0) {
      if (errno == EINTR) continue;
      out.error = fmt::format("poll: {}", std::strerror(errno));
      return out;
    }
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0) {
      out.error = "the server closed the connection before the reply ended";
      return out;
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      out.error = fmt::format("recv: {}", std::strerror(errno));
      return out;
    }
    const ssize_t used =
        nghttp2_session_mem_recv(s, reinterpret_cast<std::uint8_t*>(buf), static_cast<size_t>(n));
    if (used < 0) {
      out.error = c.too_big ? "a reply over the size limit"
                            : fmt::format("HTTP/2: {}", nghttp2_strerror(static_cast<int>(used)));
      return out;
    }
  }
  if (c.http_status != "200") {
    out.error = fmt::format("HTTP status {}", c.http_status.empty() ? "missing" : c.http_status);
  } else if (c.grpc_status != "0") {
    out.error =
        c.grpc_status.empty()
            ? (c.close_code != 0 ? fmt::format("stream reset (HTTP/2 error {})", c.close_code)
                                 : std::string("no grpc-status in the reply"))
            : fmt::format("grpc-status {} {}", c.grpc_status, c.grpc_message);
  } else {
    out.body = std::move(c.body);
  }
  return out;
}

}  // namespace

grpc_result grpc_unary_call(const std::string& socket_path, std::string_view method,
                            std::string_view request, std::chrono::milliseconds timeout,
                            std::size_t max_body) {
  grpc_result out;
  const auto deadline = grpc_clock::now() + timeout;
  const int fd = grpc_connect(socket_path, deadline, out.error);
  if (fd < 0) return out;
  grpc_call_state c;
  c.max_body = max_body;
  c.request.push_back('\0');
  const auto n = static_cast<std::uint32_t>(request.size());
  for (int shift = 24; shift >= 0; shift -= 8)
    c.request.push_back(static_cast<char>((n >> shift) & 0xffu));
  c.request.append(request);

  nghttp2_session_callbacks* cb = nullptr;
  nghttp2_session* s = nullptr;
  if (nghttp2_session_callbacks_new(&cb) != 0) {
    ::close(fd);
    out.error = "HTTP/2: out of memory";
    return out;
  }
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, grpc_on_data);
  nghttp2_session_callbacks_set_on_header_callback(cb, grpc_on_header);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, grpc_on_close);
  const int rc = nghttp2_session_client_new(&s, cb, &c);
  nghttp2_session_callbacks_del(cb);
  if (rc != 0) {
    ::close(fd);
    out.error = "HTTP/2: cannot start a session";
    return out;
  }
  out = grpc_exchange(s, fd, c, method, deadline);
  nghttp2_session_del(s);
  ::close(fd);
  return out;
}

}  // namespace joules::kubelet
