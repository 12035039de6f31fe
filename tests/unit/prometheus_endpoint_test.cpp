// The Prometheus endpoint renders its per-state families once per state and shares that text
// between scrapes; each scrape adds its own tail.  And the connection's writer sends head, shared
// body and tail in order, however the socket cuts them.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "export/prometheus/prometheus_endpoint.hpp"
#include "http/gzip_member.hpp"
#include "http/http_connection.hpp"

namespace joules::exporter {
namespace {

// A source whose state changes when the test says so.
struct fake_state {
  std::atomic<int> version{1};
  std::atomic<int> fills{0};
  std::atomic<bool> throw_once{false};
};

class fake_source : public metric_source {
 public:
  fake_source(exposition& per_state, exposition& per_scrape, const label_set& base, fake_state& s)
      : state_(s), base_(base) {
    value_ = &per_state.add_family("test_value", "The state's version.", metric_type::gauge);
    scrapes_ = &per_scrape.add_family("test_scrapes_total", "Scrapes.", metric_type::counter);
  }
  bool update() override {
    const int v = state_.version.load();
    const bool changed = v != seen_;
    seen_ = v;
    return changed;
  }
  void fill() override {
    ++state_.fills;
    if (state_.throw_once.exchange(false)) throw std::runtime_error("a snapshot went missing");
    value_->add(base_, seen_);
  }
  void fill_live(mono_time, const serving_stats& stats) override {
    scrapes_->add(base_, static_cast<double>(stats.scrapes));
  }

 private:
  fake_state& state_;
  label_set base_;
  int seen_ = 0;
  metric_family* value_;
  metric_family* scrapes_;
};

// A whole gzip stream, decoded by zlib (any number of members); "<error>" when it is not valid.
std::string gunzip(std::string_view gz) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 16 + 15), Z_OK);
  std::string out;
  std::array<char, 65536> buf{};
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buf.data());
    z.avail_out = static_cast<uInt>(buf.size());
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf.data(), buf.size() - z.avail_out);
  }
  const bool whole = rc == Z_STREAM_END && z.avail_in == 0;
  inflateEnd(&z);
  return whole ? out : "<error>";
}

// One request on a new connection; the whole response.
std::string request(std::uint16_t port, std::string_view method, std::string_view fields = {}) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a), 0);
  const std::string req = std::string(method) +
                          " /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" +
                          std::string(fields) + "\r\n";
  EXPECT_EQ(::send(fd, req.data(), req.size(), 0), static_cast<ssize_t>(req.size()));
  std::string out;
  std::array<char, 4096> buf{};
  for (ssize_t n; (n = ::recv(fd, buf.data(), buf.size(), 0)) > 0;)
    out.append(buf.data(), static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

std::string body_of(const std::string& response) {
  return response.substr(response.find("\r\n\r\n") + 4);
}

TEST(PrometheusEndpoint, RendersOncePerStateAndAddsATailPerScrape) {
  fake_state state;
  prometheus_endpoint endpoint(
      listen_address{"127.0.0.1", 0},
      [&](exposition& per_state, exposition& per_scrape,
          const label_set& base) -> std::unique_ptr<metric_source> {
        return std::make_unique<fake_source>(per_state, per_scrape, base, state);
      },
      label_set{{"hostname", "n"}});
  endpoint.start();
  const std::uint16_t port = endpoint.address().port;
  std::string body;
  for (int i = 1; i <= 3; ++i) {
    body = body_of(request(port, "GET"));
    EXPECT_EQ(body,
              "# HELP test_value The state's version.\n# TYPE test_value gauge\n"
              "test_value{hostname=\"n\"} 1\n"
              "# HELP test_scrapes_total Scrapes.\n# TYPE test_scrapes_total counter\n"
              "test_scrapes_total{hostname=\"n\"} " +
                  std::to_string(i) + "\n");
  }
  EXPECT_EQ(state.fills.load(), 1);
  EXPECT_EQ(endpoint.renders(), 1U);

  // HEAD: the head of what GET would send, no body, and not a scrape.
  const std::string head = request(port, "HEAD");
  EXPECT_EQ(body_of(head), "");
  EXPECT_NE(head.find("Content-Length: " + std::to_string(body.size()) + "\r\n"), std::string::npos)
      << head;
  EXPECT_EQ(endpoint.stats().scrapes_served, 3U);

  state.version = 2;
  body = body_of(request(port, "GET"));
  EXPECT_NE(body.find("test_value{hostname=\"n\"} 2\n"), std::string::npos) << body;
  EXPECT_NE(body.find("test_scrapes_total{hostname=\"n\"} 4\n"), std::string::npos) << body;
  EXPECT_EQ(state.fills.load(), 2);
  EXPECT_EQ(endpoint.stats().scrapes_served, 4U);

  // gzip, as Prometheus asks for it: the same text, encoded; no new rendering.
  const std::string plain = body_of(request(port, "GET"));
  const std::string gz = request(port, "GET", "Accept-Encoding: gzip\r\n");
  EXPECT_NE(gz.find("\r\nContent-Encoding: gzip\r\n"), std::string::npos) << gz;
  EXPECT_NE(gz.find("\r\nVary: Accept-Encoding\r\n"), std::string::npos);
  std::string decoded = gunzip(body_of(gz));
  EXPECT_EQ(decoded.substr(0, decoded.find("test_scrapes_total{")),
            plain.substr(0, plain.find("test_scrapes_total{")));
  EXPECT_NE(decoded.find("test_scrapes_total{hostname=\"n\"} 6\n"), std::string::npos) << decoded;
  decoded = gunzip(body_of(request(port, "GET", "Accept-Encoding: gzip\r\n")));
  EXPECT_NE(decoded.find("test_scrapes_total{hostname=\"n\"} 7\n"), std::string::npos) << decoded;
  EXPECT_EQ(body_of(request(port, "GET", "Accept-Encoding: gzip;q=0\r\n")).substr(0, 6), "# HELP");
  EXPECT_EQ(state.fills.load(), 2);

  // A rendering that fails is answered 500, and the state it took is rendered at the next
  // scrape, not skipped until the state changes again.
  state.version = 3;
  state.throw_once = true;
  EXPECT_TRUE(request(port, "GET").starts_with("HTTP/1.1 500 "));
  body = body_of(request(port, "GET"));
  EXPECT_NE(body.find("test_value{hostname=\"n\"} 3\n"), std::string::npos) << body;
  EXPECT_EQ(state.fills.load(), 4);
  endpoint.stop();
}

TEST(GzipMember, SharedPrefixAndStoredTailDecodeToTheirConcatenation) {
  std::string text;
  for (int i = 0; text.size() < 200000; ++i)
    text += "joules_gpu_power_watts{gpu=\"" + std::to_string(i % 64) + "\"} " +
            std::to_string(i * 7) + "\n";
  const gzip_prefix p = gzip_begin(text);
  EXPECT_LT(p.bytes.size(), text.size() / 4);
  for (const std::string& tail :
       {std::string(), std::string("up 1\n"), std::string(70000, 'x'), std::string(131070, 'y')}) {
    std::string member = p.bytes;
    const std::size_t before = member.size();
    gzip_end(p, tail, member);
    EXPECT_EQ(member.size() - before, gzip_end_size(tail.size()));
    EXPECT_TRUE(gunzip(member) == text + tail) << tail.size();
  }
  const gzip_prefix empty = gzip_begin("");
  std::string member = empty.bytes;
  gzip_end(empty, "a\n", member);
  EXPECT_EQ(gunzip(member), "a\n");
  // The trailer is checked: a wrong CRC does not decode.
  member[member.size() - 8] = static_cast<char>(member[member.size() - 8] ^ 1);
  EXPECT_EQ(gunzip(member), "<error>");
}

// Head, shared body and tail arrive whole and in order through a socket that takes a little at a
// time (a small send buffer, read only when full).
TEST(HttpConnection, SendsHeadSharedBodyAndTailAcrossPartialWrites) {
  std::array<int, 2> fds{};
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds.data()), 0);
  const int small = 4096;
  ::setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  detail::connection c;
  c.fd = detail::unique_fd(fds[0]);
  c.out = "HEAD\r\n\r\n";
  std::string body;
  for (int i = 0; body.size() < 300000; ++i)
    body += "line " + std::to_string(i) + "\n";
  c.body = std::make_shared<const std::string>(body);
  c.tail = "tail 1\n";
  const std::string want = c.out + body + c.tail;
  EXPECT_EQ(detail::response_size(c), want.size());

  std::string got;
  std::array<char, 65536> buf{};
  int rounds = 0;
  for (;;) {
    const detail::io_status st = detail::send_pending(c);
    ASSERT_NE(st, detail::io_status::failed);
    if (st == detail::io_status::progress) break;
    ++rounds;
    for (ssize_t n; (n = ::recv(fds[1], buf.data(), buf.size(), MSG_DONTWAIT)) > 0;)
      got.append(buf.data(), static_cast<std::size_t>(n));
  }
  for (ssize_t n; (n = ::recv(fds[1], buf.data(), buf.size(), MSG_DONTWAIT)) > 0;)
    got.append(buf.data(), static_cast<std::size_t>(n));
  EXPECT_GT(rounds, 3);  // the writes were cut, across the parts' edges
  EXPECT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want);
  EXPECT_EQ(c.written, want.size());
  detail::clear_response(c);
  EXPECT_EQ(detail::response_size(c), 0U);
  EXPECT_EQ(c.body, nullptr);
  ::close(fds[1]);
}

TEST(HttpConnection, RaisesTheSendBufferToHoldTheResponse) {
  std::array<int, 2> fds{};
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds.data()), 0);
  const int small = 8192;
  ::setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  detail::connection c;
  c.fd = detail::unique_fd(fds[0]);
  int now = 0;
  socklen_t len = sizeof now;
  ::getsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &now, &len);
  c.send_buffer = static_cast<std::size_t>(now);
  c.body = std::make_shared<const std::string>(100000, 'x');
  detail::fit_send_buffer(c);
  ::getsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &now, &len);
  EXPECT_GE(now, 100000);  // wmem_max is at least 208 KiB on Linux
  EXPECT_GE(c.send_buffer, 100000U);
  ::close(fds[1]);
}

}  // namespace
}  // namespace joules::exporter
