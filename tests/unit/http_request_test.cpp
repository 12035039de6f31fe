#include "http/http_request.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "http/http_response.hpp"
#include "http/listen_address.hpp"
#include "util/error.hpp"

namespace joules::exporter {
namespace {

using namespace std::literals;
using http::parse_request;
using http::parse_status;

const http::parser_limits kLimits{};

http::parse_result parse(std::string_view s) {
  return parse_request(s, kLimits);
}

int error_of(std::string_view s) {
  const auto r = parse(s);
  EXPECT_EQ(r.status, parse_status::error) << s;
  return r.error_status;
}

constexpr std::string_view kGet = "GET /metrics HTTP/1.1\r\nHost: localhost:9400\r\n\r\n";

TEST(HttpRequest, ParsesAPrometheusScrape) {
  const std::string req =
      "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9400\r\nUser-Agent: Prometheus/2.42.0\r\n"
      "Accept: application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.4\r\n"
      "Accept-Encoding: gzip\r\nX-Prometheus-Scrape-Timeout-Seconds: 10\r\n\r\n";
  const auto r = parse(req);
  ASSERT_EQ(r.status, parse_status::complete);
  EXPECT_EQ(r.consumed, req.size());
  EXPECT_EQ(r.head.method, "GET");
  EXPECT_EQ(r.head.target, "/metrics");
  EXPECT_EQ(r.head.path, "/metrics");
  EXPECT_EQ(r.head.version_minor, 1U);
  EXPECT_TRUE(r.head.keep_alive);
  EXPECT_TRUE(r.head.accepts_gzip);
}

TEST(HttpRequest, IncompleteUntilTheEmptyLineWhicheverWayItArrives) {
  const std::string req(kGet);
  std::size_t resume = 0;
  for (std::size_t n = 0; n < req.size(); ++n) {
    const auto r = parse_request(std::string_view(req).substr(0, n), kLimits, &resume);
    ASSERT_EQ(r.status, parse_status::incomplete) << n;
    ASSERT_LE(resume, n);
  }
  const auto r = parse_request(req, kLimits, &resume);
  ASSERT_EQ(r.status, parse_status::complete);
  EXPECT_EQ(r.consumed, req.size());
  EXPECT_EQ(resume, 0U);
}

TEST(HttpRequest, BareLfLeadingEmptyLinesAndPipelining) {
  auto r = parse("GET / HTTP/1.0\n\n");
  ASSERT_EQ(r.status, parse_status::complete);
  EXPECT_EQ(r.head.version_minor, 0U);
  EXPECT_FALSE(r.head.keep_alive);
  EXPECT_EQ(r.consumed, 16U);

  r = parse("\r\n\r\n" + std::string(kGet));
  ASSERT_EQ(r.status, parse_status::complete);
  EXPECT_EQ(r.consumed, kGet.size() + 4);

  const std::string two = std::string(kGet) + "HEAD / HTTP/1.1\r\nHost: x\r\n\r\n";
  r = parse(two);
  ASSERT_EQ(r.status, parse_status::complete);
  EXPECT_EQ(r.consumed, kGet.size());
  r = parse(std::string_view(two).substr(kGet.size()));
  ASSERT_EQ(r.status, parse_status::complete);
  EXPECT_EQ(r.head.method, "HEAD");
  EXPECT_EQ(r.head.path, "/");
}

TEST(HttpRequest, TargetsInEveryAcceptedForm) {
  const auto path = [](std::string_view target) {
    const std::string req = "GET " + std::string(target) + " HTTP/1.1\r\nHost: h\r\n\r\n";
    const auto r = parse(req);
    EXPECT_EQ(r.status, parse_status::complete) << target;
    return std::string(r.head.path);
  };
  EXPECT_EQ(path("/metrics?collect[]=gpu"), "/metrics");
  EXPECT_EQ(path("/"), "/");
  EXPECT_EQ(path("/metrics/"), "/metrics/");
  EXPECT_EQ(path("http://node-17:9400/metrics"), "/metrics");
  EXPECT_EQ(path("HTTP://node-17:9400/metrics?x=1"), "/metrics");
  EXPECT_EQ(path("https://node-17"), "/");
  EXPECT_EQ(path("http://node-17?a=/b"), "/");
  EXPECT_EQ(error_of("GET * HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(error_of("GET metrics HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(parse("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n").status, parse_status::complete);
  EXPECT_EQ(parse("CONNECT h:443 HTTP/1.1\r\nHost: h\r\n\r\n").status, parse_status::complete);
}

TEST(HttpRequest, ConnectionOptions) {
  const auto keep = [](std::string_view version, std::string_view connection) {
    std::string req = "GET / " + std::string(version) + "\r\nHost: h\r\n";
    if (!connection.empty()) req += "Connection: " + std::string(connection) + "\r\n";
    const auto r = parse(req + "\r\n");
    EXPECT_EQ(r.status, parse_status::complete);
    return r.head.keep_alive;
  };
  EXPECT_TRUE(keep("HTTP/1.1", ""));
  EXPECT_FALSE(keep("HTTP/1.1", "close"));
  EXPECT_FALSE(keep("HTTP/1.1", "Upgrade, CLOSE"));
  EXPECT_TRUE(keep("HTTP/1.1", "keep-alive"));
  EXPECT_FALSE(keep("HTTP/1.0", ""));
  EXPECT_TRUE(keep("HTTP/1.0", "Keep-Alive"));
  EXPECT_FALSE(keep("HTTP/1.0", "keep-alive, close"));
  // A later 1.x is served as 1.1.
  EXPECT_EQ(parse("GET / HTTP/1.7\r\nHost: h\r\n\r\n").head.version_minor, 1U);
}

TEST(HttpRequest, AcceptEncodingGzipWithWeights) {
  const auto gzip = [](std::string_view fields) {
    const auto r = parse("GET /metrics HTTP/1.1\r\nHost: h\r\n" + std::string(fields) + "\r\n");
    EXPECT_EQ(r.status, parse_status::complete) << fields;
    return r.head.accepts_gzip;
  };
  EXPECT_FALSE(gzip(""));
  EXPECT_TRUE(gzip("Accept-Encoding: gzip\r\n"));
  EXPECT_TRUE(gzip("accept-encoding: deflate, GZIP;q=0.5, br\r\n"));
  EXPECT_TRUE(gzip("Accept-Encoding: x-gzip\r\n"));
  EXPECT_TRUE(gzip("Accept-Encoding: br\r\nAccept-Encoding: gzip\r\n"));  // fields combine
  EXPECT_TRUE(gzip("Accept-Encoding: *\r\n"));
  EXPECT_TRUE(gzip("Accept-Encoding: gzip ; Q=1.000\r\n"));
  EXPECT_TRUE(gzip("Accept-Encoding: gzip;q=0.001\r\n"));
  EXPECT_FALSE(gzip("Accept-Encoding: gzip;q=0\r\n"));
  EXPECT_FALSE(gzip("Accept-Encoding: gzip;q=0.000\r\n"));
  EXPECT_FALSE(gzip("Accept-Encoding: *, gzip;q=0\r\n"));  // named beats the wildcard
  EXPECT_FALSE(gzip("Accept-Encoding: *;q=0\r\n"));
  EXPECT_FALSE(gzip("Accept-Encoding: identity, deflate\r\n"));
  EXPECT_FALSE(gzip("Accept-Encoding: gzipx, xgzip\r\n"));
  EXPECT_FALSE(gzip("Accept-Encoding: gzip;q=2\r\n"));  // malformed weight: not accepted
  EXPECT_FALSE(gzip("Accept-Encoding: gzip;q=\r\n"));
}

TEST(HttpRequest, MalformedRequestLines) {
  EXPECT_EQ(error_of("GET  /metrics HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(error_of("GET /metrics  HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(error_of("GET /metrics HTTP/1.1 \r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(error_of("GET /metrics\r\nHost: h\r\n\r\n"), 400);  // HTTP/0.9
  EXPECT_EQ(error_of("G(T /metrics HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(error_of(" GET /metrics HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(error_of("GET /met\x01rics HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(error_of("GET /m\xC3\xA9 HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(error_of("GET /metrics http/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(error_of("GET /metrics HTTP/1.10\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(error_of("GET /metrics HTTP/2.0\r\nHost: h\r\n\r\n"), 505);
  EXPECT_EQ(error_of("GET /metrics HTTP/0.9\r\nHost: h\r\n\r\n"), 505);
  EXPECT_EQ(error_of("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\n\n"sv), 400);  // TLS hello
  EXPECT_EQ(error_of("\r\r\n"), 400);
}

TEST(HttpRequest, MalformedFields) {
  const auto with = [](std::string_view fields) {
    return error_of("GET / HTTP/1.1\r\nHost: h\r\n" + std::string(fields) + "\r\n");
  };
  EXPECT_EQ(with("Bad Name: x\r\n"), 400);
  EXPECT_EQ(with("Name : x\r\n"), 400);  // whitespace before the colon
  EXPECT_EQ(with("NoColon\r\n"), 400);
  EXPECT_EQ(with(": empty name\r\n"), 400);
  EXPECT_EQ(with("X: a\r\n folded\r\n"), 400);  // obs-fold
  EXPECT_EQ(with("X: a\x01"
                 "b\r\n"),
            400);
  EXPECT_EQ(with("X: a\x7F\r\n"), 400);
  EXPECT_EQ(with("X: a\rb\r\n"), 400);  // a bare CR
  EXPECT_EQ(with("Host: again\r\n"), 400);
  EXPECT_EQ(error_of("GET / HTTP/1.1\r\n\r\n"), 400);  // 1.1 without Host
  EXPECT_EQ(parse("GET / HTTP/1.0\r\n\r\n").status, parse_status::complete);
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost: h\r\nX: caf\xC3\xA9 \t\r\n\r\n").status,
            parse_status::complete);  // obs-text and trailing whitespace are fine
}

TEST(HttpRequest, BodiesAreRefused) {
  const auto with = [](std::string_view fields) {
    const auto r = parse("POST /metrics HTTP/1.1\r\nHost: h\r\n" + std::string(fields) + "\r\n");
    return r.status == parse_status::complete ? 0 : r.error_status;
  };
  EXPECT_EQ(with("Content-Length: 0\r\n"), 0);
  EXPECT_EQ(with("Content-Length: 000\r\nContent-Length: 000\r\n"), 0);
  EXPECT_EQ(with("Content-Length: 5\r\n"), 413);
  EXPECT_EQ(with("Content-Length: 99999999999999999999999999\r\n"), 413);
  EXPECT_EQ(with("Content-Length: -1\r\n"), 400);
  EXPECT_EQ(with("Content-Length: 1, 1\r\n"), 400);
  EXPECT_EQ(with("Content-Length:\r\n"), 400);
  EXPECT_EQ(with("Content-Length: 0\r\nContent-Length: 1\r\n"), 400);
  EXPECT_EQ(with("Transfer-Encoding: chunked\r\n"), 413);
  EXPECT_EQ(with("Transfer-Encoding: chunked\r\nContent-Length: 0\r\n"), 400);  // smuggling
  EXPECT_EQ(error_of("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"), 400);
}

TEST(HttpRequest, Limits) {
  const http::parser_limits small{64, 3};
  const auto r_small = [&](std::string_view s) { return parse_request(s, small); };
  // A request line that does not fit: 414; fields that do not: 431.
  auto r = r_small("GET /" + std::string(80, 'a') + " HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(r.error_status, 414);
  r = r_small("GET /" + std::string(80, 'a'));  // not even complete yet
  EXPECT_EQ(r.error_status, 414);
  r = r_small("GET / HTTP/1.1\r\nHost: h\r\nX: " + std::string(60, 'x'));
  EXPECT_EQ(r.error_status, 431);
  r = r_small("GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n");
  EXPECT_EQ(r.error_status, 431);  // four fields, three allowed
  r = r_small("GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\n\r\n");
  EXPECT_EQ(r.status, parse_status::complete);
  // Exactly at the limit is fine, one byte more is not.
  std::string exact = "GET / HTTP/1.1\r\nHost: h\r\nX: \r\n\r\n";
  exact.insert(exact.size() - 4, 64 - exact.size(), 'x');
  ASSERT_EQ(exact.size(), 64U);
  EXPECT_EQ(r_small(exact).status, parse_status::complete);
  exact.insert(exact.size() - 4, "x");
  EXPECT_EQ(r_small(exact).error_status, 431);
  // Pipelined bytes past the limit do not count against the first request.
  EXPECT_EQ(r_small("GET / HTTP/1.1\r\nHost: h\r\n\r\n" + std::string(100, 'G')).status,
            parse_status::complete);
  EXPECT_EQ(r_small(std::string(64, '\n')).error_status, 400);
  // The default: 100 fields, 8 KiB.
  std::string many = "GET / HTTP/1.1\r\nHost: h\r\n";
  for (int i = 0; i < 99; ++i)
    many += "X-" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(parse(many + "\r\n").status, parse_status::complete);
  EXPECT_EQ(parse(many + "One: more\r\n\r\n").error_status, 431);
  EXPECT_EQ(
      parse("GET / HTTP/1.1\r\nHost: h\r\nX: " + std::string(9000, 'x') + "\r\n\r\n").error_status,
      431);
}

TEST(HttpRouting, MethodFirstThenPath) {
  const auto route = [](std::string_view method, std::string_view path) {
    http::request_head h;
    h.method = method;
    h.path = path;
    return http::route_request(h);
  };
  EXPECT_EQ(route("GET", "/metrics"), http::route::metrics);
  EXPECT_EQ(route("HEAD", "/metrics"), http::route::metrics);
  EXPECT_EQ(route("GET", "/"), http::route::index);
  EXPECT_EQ(route("GET", "/metrics/"), http::route::not_found);
  EXPECT_EQ(route("GET", "/../etc/passwd"), http::route::not_found);
  EXPECT_EQ(route("get", "/metrics"),
            http::route::method_not_allowed);  // methods are case-sensitive
  EXPECT_EQ(route("POST", "/metrics"), http::route::method_not_allowed);
  EXPECT_EQ(route("DELETE", "/nope"), http::route::method_not_allowed);
}

TEST(HttpResponse, HeadsAndErrors) {
  std::string out;
  http::response_head h;
  h.content_type = "text/plain; version=0.0.4; charset=utf-8";
  h.content_length = 1234;
  http::append_response_head(out, h, "Sun, 06 Nov 1994 08:49:37 GMT");
  EXPECT_EQ(out,
            "HTTP/1.1 200 OK\r\n"
            "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
            "Content-Length: 1234\r\n"
            "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
            "X-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\n\r\n");
  out.clear();
  http::append_error_response(out, 405, "D");
  EXPECT_EQ(out,
            "HTTP/1.1 405 Method Not Allowed\r\nContent-Type: text/plain; charset=utf-8\r\n"
            "Content-Length: 19\r\nDate: D\r\nAllow: GET, HEAD\r\n"
            "X-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\n"
            "Connection: close\r\n\r\nMethod Not Allowed\n");
  out.clear();
  http::append_error_response(out, 404, "D", true);  // the answer to HEAD has no body
  EXPECT_TRUE(
      out.ends_with("Content-Length: 10\r\nDate: D\r\nX-Content-Type-Options: nosniff\r\n"
                    "Cache-Control: no-store\r\nConnection: close\r\n\r\n"));
  EXPECT_EQ(http::reason_phrase(431), "Request Header Fields Too Large");
  EXPECT_EQ(http::reason_phrase(299), "Error");
}

TEST(HttpResponse, DateIsImfFixdate) {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  using std::chrono::system_clock;
  EXPECT_EQ(http::http_date(system_clock::time_point(seconds(784111777))),
            "Sun, 06 Nov 1994 08:49:37 GMT");
  EXPECT_EQ(http::http_date(system_clock::time_point(seconds(0) + milliseconds(999))),
            "Thu, 01 Jan 1970 00:00:00 GMT");
  EXPECT_EQ(http::http_date(system_clock::time_point(seconds(1709251199))),
            "Thu, 29 Feb 2024 23:59:59 GMT");
}

TEST(ListenAddress, AcceptedForms) {
  auto a = parse_listen_address("9400");
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 9400);
  a = parse_listen_address("0.0.0.0:0");
  EXPECT_EQ(a.host, "0.0.0.0");
  EXPECT_EQ(a.port, 0);
  a = parse_listen_address("node-17.example.com:65535");
  EXPECT_EQ(a.host, "node-17.example.com");
  EXPECT_EQ(a.port, 65535);
  a = parse_listen_address("[::1]:9400");
  EXPECT_EQ(a.host, "::1");
  EXPECT_EQ(a.text(), "[::1]:9400");
  EXPECT_EQ(parse_listen_address("[fe80::1%eth0]:1").host, "fe80::1%eth0");
  EXPECT_EQ(parse_listen_address("[::ffff:127.0.0.1]:1").host, "::ffff:127.0.0.1");
  EXPECT_EQ(parse_listen_address("localhost:80").text(), "localhost:80");
}

TEST(ListenAddress, RejectedWithOneLineNamingTheValue) {
  for (const auto* bad :
       {"", "x", "-1", "65536", "000009400", "9400 ", ":9400", "::1:9400", "[::1]", "[::1]9400",
        "[]:1", "[1.2.3.4]:1", "[::1]:", "host:", "ho st:1", "a/b:1", "[::1%]:1", "1:2:3"}) {
    try {
      parse_listen_address(bad, "--prometheus");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const usage_error& e) {
      const std::string what = e.what();
      EXPECT_TRUE(what.starts_with("--prometheus '" + std::string(bad) + "': ")) << what;
      EXPECT_NE(what.find("expected PORT, HOST:PORT or [IPV6]:PORT"), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos);
    }
  }
  try {
    parse_listen_address(":9400");
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("0.0.0.0:PORT"), std::string::npos);
  }
}

}  // namespace
}  // namespace joules::exporter
