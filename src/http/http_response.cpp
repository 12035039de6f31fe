#include "http/http_response.hpp"

#include <fmt/format.h>

#include <array>

namespace joules::exporter::http {

route route_request(const request_head& head) {
  // Method first, whatever the target: every method but GET and HEAD gets the same answer.
  if (head.method != "GET" && head.method != "HEAD") return route::method_not_allowed;
  if (head.path == "/metrics") return route::metrics;
  if (head.path == "/") return route::index;
  return route::not_found;
}

std::string_view reason_phrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Content Too Large";
    case 414:
      return "URI Too Long";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Error";
  }
}

void append_response_head(std::string& out, const response_head& h, std::string_view date) {
  fmt::format_to(std::back_inserter(out), "HTTP/1.1 {} {}\r\n", h.status, reason_phrase(h.status));
  out += "Content-Type: ";
  out += h.content_type;
  fmt::format_to(std::back_inserter(out), "\r\nContent-Length: {}\r\n", h.content_length);
  if (h.gzip) out += "Content-Encoding: gzip\r\n";
  if (h.vary_accept_encoding) out += "Vary: Accept-Encoding\r\n";
  out += "Date: ";
  out += date;
  out += "\r\n";
  if (h.allow) out += "Allow: GET, HEAD\r\n";
  if (h.www_authenticate) out += "WWW-Authenticate: Basic\r\n";
  out += h.extra;
  // The body is never a document to sniff or keep: metrics are stale at the next scrape.
  out += "X-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\n";
  if (h.close) {
    out += "Connection: close\r\n";
  } else if (h.keep_alive) {
    out += "Connection: keep-alive\r\n";
  }
  out += "\r\n";
}

void append_error_response(std::string& out, int status, std::string_view date, bool head_only,
                           std::string_view extra) {
  const std::string_view reason = reason_phrase(status);
  response_head h;
  h.status = status;
  h.content_type = kErrorContentType;
  h.content_length = reason.size() + 1;
  h.close = true;
  h.allow = status == 405;
  h.www_authenticate = status == 401;
  h.extra = extra;
  append_response_head(out, h, date);
  if (head_only) return;
  out += reason;
  out += '\n';
}

std::string http_date(std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  static constexpr std::array<std::string_view, 7> kDays = {"Sun", "Mon", "Tue", "Wed",
                                                            "Thu", "Fri", "Sat"};
  static constexpr std::array<std::string_view, 12> kMonths = {
      "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const auto day = floor<days>(t);
  const year_month_day ymd{day};
  const hh_mm_ss hms{floor<seconds>(t - day)};
  return fmt::format("{}, {:02} {} {:04} {:02}:{:02}:{:02} GMT", kDays[weekday{day}.c_encoding()],
                     static_cast<unsigned>(ymd.day()),
                     kMonths[static_cast<unsigned>(ymd.month()) - 1], static_cast<int>(ymd.year()),
                     hms.hours().count(), hms.minutes().count(), hms.seconds().count());
}

}  // namespace joules::exporter::http
