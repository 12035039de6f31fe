#pragma once
// What the /metrics server answers, decided and written without sockets: routing of a parsed
// request, and response heads.  Nothing from the request is ever copied into a response (no
// reflection): bodies are fixed texts or the metrics.
//
// Pure: the date is passed in.

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include "http/http_request.hpp"

namespace joules::exporter::http {

enum class route {
  metrics,             // GET or HEAD /metrics: the exposition
  index,               // GET or HEAD /: a pointer to /metrics
  not_found,           // GET or HEAD of anything else: 404
  method_not_allowed,  // any other method, on any target: 405 with `Allow: GET, HEAD`
};

route route_request(const request_head& head);

// The fixed body of `/` (HTML, so a browser shows a link) and of the error statuses.
inline constexpr std::string_view kIndexBody =
    "<html><head><title>joules</title></head><body><h1>joules</h1>"
    "<p><a href=\"/metrics\">Metrics</a></p></body></html>\n";
inline constexpr std::string_view kIndexContentType = "text/html; charset=utf-8";
inline constexpr std::string_view kErrorContentType = "text/plain; charset=utf-8";

// "Not Found" for 404, ...; "Error" for a status not listed.
std::string_view reason_phrase(int status);

struct response_head {
  int status = 200;
  std::string_view content_type;
  std::size_t content_length = 0;
  bool close = false;       // sends `Connection: close`; the server closes after writing
  bool keep_alive = false;  // sends `Connection: keep-alive`, which an HTTP/1.0 client needs
  bool allow = false;       // sends `Allow: GET, HEAD` (405)
  bool gzip = false;        // sends `Content-Encoding: gzip`
  bool vary_accept_encoding = false;  // sends `Vary: Accept-Encoding` (the body depends on it)
  bool www_authenticate = false;      // sends `WWW-Authenticate: Basic` (401)
  std::string_view extra;  // whole field lines ("Name: value\r\n") of the web configuration
};

// Appends the status line and header fields, ending with the empty line, as HTTP/1.1.
// `date` is the Date field's value (RFC 9110 §6.6.1 asks a server with a clock to send it).
void append_response_head(std::string& out, const response_head& h, std::string_view date);

// An error response, always with close: the head (with `extra` field lines, and
// `WWW-Authenticate: Basic` for 401), and unless `head_only` (the answer to a HEAD request has no
// body) a body made of the reason phrase and a newline.
void append_error_response(std::string& out, int status, std::string_view date,
                           bool head_only = false, std::string_view extra = {});

// IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT", written without locale (RFC 9110 §5.6.7).
std::string http_date(std::chrono::system_clock::time_point t);

}  // namespace joules::exporter::http
