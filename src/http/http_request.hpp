#pragma once
// A strict parser for the head of an HTTP/1.x request (RFC 9112), for the /metrics server.
// The server takes no request bodies, so the head is the whole request: the parser says whether
// the bytes received so far hold a complete head, and if so what it asks for, or which error
// status to answer with.  Anything it does not understand is an error; the server then answers
// and closes, and never guesses where the next request starts.
//
// Pure: no sockets, no allocation; the views returned point into the caller's buffer, except
// `path` of an absolute-form target without one ("http://host"), which is a static "/".

#include <cstddef>
#include <string_view>

namespace joules::exporter::http {

struct parser_limits {
  std::size_t max_head_bytes = 8192;  // request line + fields + the empty line, CRLFs included
  std::size_t max_fields = 100;
};

enum class parse_status {
  incomplete,  // no complete head yet, and no error: read more
  complete,    // `head` is valid and `consumed` bytes of the buffer belong to it
  error,       // answer `error_status` and close the connection
};

struct request_head {
  std::string_view method;     // case-sensitive token: "GET"
  std::string_view target;     // as sent: "/metrics?x=1", "http://host:9400/metrics"
  std::string_view path;       // target without scheme, authority and query: "/metrics"
  unsigned version_minor = 1;  // HTTP/1.0 or HTTP/1.1
  bool keep_alive = true;      // 1.1 unless `Connection: close`; 1.0 only with keep-alive
  // Accept-Encoding lists gzip (or x-gzip, or "*" without gzip) with a weight above 0
  // (RFC 9110 §12.5.3); Prometheus sends `Accept-Encoding: gzip`.
  bool accepts_gzip = false;
  std::string_view authorization;  // the Authorization field's value, empty when absent
};

struct parse_result {
  parse_status status = parse_status::incomplete;
  // With status error: 400 (malformed), 413 (announces a body), 414 (request line too long),
  // 431 (head too large or too many fields) or 505 (not HTTP/1.x).
  int error_status = 0;
  std::size_t consumed = 0;  // with status complete: bytes of the head, leading empty lines too
  request_head head;
};

// Parses the head at the start of `buffer`.  Empty lines before the request line are skipped
// (RFC 9112 §2.2), and a bare LF ends a line as CRLF does; a CR anywhere else is an error.
// `resume`, when given, is where the previous call on the same growing buffer stopped looking
// for the end of the head, so that a client sending a byte at a time costs O(bytes), not
// O(bytes²); start it at 0 and reset it to 0 after consuming a request.
parse_result parse_request(std::string_view buffer, const parser_limits& limits,
                           std::size_t* resume = nullptr);

}  // namespace joules::exporter::http
