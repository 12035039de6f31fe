#pragma once
// One connection of http_server: its buffers and state, and the non-blocking socket calls made
// on it.  Policy (what to answer, when to give up) stays in http_server.cpp.  Internal.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "http/listen_socket.hpp"
#include "http/tls_context.hpp"
#include "util/clock.hpp"

namespace joules::exporter::detail {

enum class phase {
  handshake,  // TLS: the handshake, before any request (within request_timeout of the accept)
  reading,    // waiting for (the rest of) a request head
  writing,    // writing a response; nothing is read meanwhile, so one response is buffered at most
  // The last response is out and our side is shut down; what the client still sends is read and
  // thrown away until it closes.  Closing at once with unread bytes would make the kernel send a
  // reset, which can destroy the response before the client has read it (RFC 9112 §9.6).
  lingering,
};

struct connection {
  std::unique_ptr<tls_stream> tls;  // HTTPS; null for plain HTTP
  unique_fd fd;
  phase state = phase::reading;
  std::string in;
  std::size_t resume = 0;    // where parse_request stopped looking in `in`
  std::size_t consumed = 0;  // bytes of `in` the response being written answers
  // The response being written, in this order: `out` (the head, or a whole fixed response), the
  // shared metrics body, and this request's `tail`.
  std::string out;
  std::shared_ptr<const std::string> body;
  std::string tail;
  std::size_t written = 0;      // bytes of the three sent so far
  std::size_t send_buffer = 0;  // SO_SNDBUF as the kernel reports it
  mono_time deadline{};
  mono_time waiting_since{};  // when it began to wait for the current request, or lingering
  unsigned requests = 0;
  bool close_after = false;  // the response being written is the last
  bool mid_request = false;  // part of a request has arrived: dropping it now is an error
  bool ready = false;        // `in` may hold a pipelined request: look at it next round
  std::size_t lingered = 0;
  bool auth_pending = false;  // its request waits for basic auth's bcrypt thread
  short tls_wait = 0;         // TLS: POLLIN or POLLOUT when the last call stopped for the socket
};

enum class io_status {
  progress,     // bytes moved (receive) or everything was sent (send_pending)
  would_block,  // nothing more for now: wait for poll()
  closed,       // the client closed its side (receive)
  failed,       // a socket error: the connection is lost
};

// What poll() should wait for on this connection.
short poll_events(const connection& c);

// TLS: goes on with the handshake; progress once it is done (the connection is then reading),
// would_block while it waits for the client, failed when it failed.
io_status continue_handshake(connection& c);

// One recv() of at most `max_bytes`, appended to c.in.
io_status receive(connection& c, std::size_t max_bytes);

// Bytes of the response: out, body and tail.
std::size_t response_size(const connection& c);

// Raises the socket's send buffer to hold the whole response when it is smaller, so that one
// send usually takes it all (loopback sockets start large; over a network they start near 64 KiB).
void fit_send_buffer(connection& c);

// Sends the response from c.written on, with sendmsg() over its parts (no copy), until it is
// all sent or the socket is full.
io_status send_pending(connection& c);

// Forgets the response just sent, keeping the buffers' capacity.
void clear_response(connection& c);

// Shuts our side down and starts lingering until `deadline`.
void start_lingering(connection& c, mono_time now, mono_time deadline);

// Reads and drops what a lingering client sends; true once the connection should be closed
// (the client closed, an error, or it sent more than `max_bytes` in all).
bool drain(connection& c, std::size_t max_bytes);

// Answers `response` to a connection over the cap without waiting for anything, reading first
// what request has already arrived, so that closing sends no reset ahead of the answer.
void refuse(int fd, std::string_view response);

}  // namespace joules::exporter::detail
