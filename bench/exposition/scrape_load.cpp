// Scrape latency under concurrent scrapers: N threads each GET /metrics in a loop for a while,
// on one keep-alive connection each (as Prometheus does) or a new connection per scrape, and
// the latency of every scrape (request sent to last body byte read; connect included when
// connecting each time) is pooled into percentiles.  With --gzip each request says
// `Accept-Encoding: gzip`, as Prometheus does (the body is read, not decoded).
// The clients start together, so with --pause-ms they scrape in bursts of N at once (the worst
// case); --stagger spreads their first scrapes evenly over the pause instead, as N Prometheus
// servers scraping at the same interval would be (Prometheus offsets each target's scrapes
// within the interval).
//   joules_scrape_load HOST PORT [--clients 50] [--seconds 10] [--new-connection] [--pause-ms 0]
//                     [--gzip] [--stagger]
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

struct options {
  std::string host;
  std::string port;
  unsigned clients = 50;
  double seconds = 10;
  bool new_connection = false;
  int pause_ms = 0;
  bool gzip = false;
  bool stagger = false;
};

int connect_to(const options& o) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* ai = nullptr;
  if (::getaddrinfo(o.host.c_str(), o.port.c_str(), &hints, &ai) != 0) return -1;
  const int fd = ::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && ::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
    ::close(fd);
    ::freeaddrinfo(ai);
    return -1;
  }
  ::freeaddrinfo(ai);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

// Sends one request and reads its whole response; false on any failure or a status not 200.
// `close_after` says to ask for `Connection: close`; on return it says whether the server will
// close (it does so after max_requests_per_connection).
bool scrape(int fd, std::string& buf, bool& close_after, bool gzip) {
  const std::string req = std::string("GET /metrics HTTP/1.1\r\nHost: x\r\n") +
                          (close_after ? "Connection: close\r\n" : "") +
                          (gzip ? "Accept-Encoding: gzip\r\n" : "") + "\r\n";
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    return false;
  }
  // Received straight into `buf`, which only grows (no copy through a chunk, no zeroing per
  // scrape): the client's own cost stays small next to the server's.
  constexpr std::size_t kRoom = 256 * 1024;
  std::size_t have = 0;
  std::size_t need = std::string::npos;
  while (need == std::string::npos || have < need) {
    if (buf.size() < have + kRoom) buf.resize(have + kRoom);
    const ssize_t n = ::recv(fd, buf.data() + have, buf.size() - have, 0);
    if (n <= 0) return false;
    have += static_cast<std::size_t>(n);
    if (need == std::string::npos) {
      const std::string_view got(buf.data(), have);
      const std::size_t end = got.find("\r\n\r\n");
      if (end == std::string::npos) continue;
      const std::size_t cl = got.find("Content-Length: ");
      if (cl == std::string::npos || cl > end) return false;
      need = end + 4 + std::stoul(std::string(got.substr(cl + 16, 20)));
      const std::size_t close = got.find("\r\nConnection: close\r\n");
      // An HTTP/1.0 server (Python's http.server, as in matcha) closes after every response.
      close_after = (close != std::string::npos && close < end) || got.starts_with("HTTP/1.0 ");
    }
  }
  const std::string_view got(buf.data(), have);
  return got.starts_with("HTTP/1.1 200 ") || got.starts_with("HTTP/1.0 200 ");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: joules_scrape_load HOST PORT [--clients N] [--seconds S] "
                 "[--new-connection] [--pause-ms MS] [--gzip] [--stagger]\n");
    return 2;
  }
  options o;
  o.host = argv[1];
  o.port = argv[2];
  for (int i = 3; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--clients" && i + 1 < argc)
      o.clients = static_cast<unsigned>(std::stoul(argv[++i]));
    else if (a == "--seconds" && i + 1 < argc)
      o.seconds = std::stod(argv[++i]);
    else if (a == "--new-connection")
      o.new_connection = true;
    else if (a == "--pause-ms" && i + 1 < argc)
      o.pause_ms = std::stoi(argv[++i]);
    else if (a == "--gzip")
      o.gzip = true;
    else if (a == "--stagger")
      o.stagger = true;
    else {
      std::fprintf(stderr, "joules_scrape_load: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  std::vector<std::vector<double>> latencies(o.clients);
  std::atomic<unsigned> failures{0};
  const auto start = clock_type::now();
  const auto until = start + std::chrono::duration_cast<clock_type::duration>(
                                 std::chrono::duration<double>(o.seconds));
  std::vector<std::thread> threads;
  for (unsigned c = 0; c < o.clients; ++c) {
    threads.emplace_back([&, c] {
      std::string buf;
      int fd = -1;
      if (o.stagger) {
        std::this_thread::sleep_for(std::chrono::microseconds(1000LL * o.pause_ms * c / o.clients));
      }
      while (clock_type::now() < until) {
        const auto t0 = clock_type::now();
        if (fd < 0) fd = connect_to(o);
        bool close = o.new_connection;
        const bool ok = fd >= 0 && scrape(fd, buf, close, o.gzip);
        const auto t1 = clock_type::now();
        if (ok) {
          latencies[c].push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        } else {
          ++failures;
        }
        if (!ok || close) {
          if (fd >= 0) ::close(fd);
          fd = -1;
        }
        if (o.pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(o.pause_ms));
      }
      if (fd >= 0) ::close(fd);
    });
  }
  for (auto& t : threads)
    t.join();
  const double wall = std::chrono::duration<double>(clock_type::now() - start).count();
  std::vector<double> all;
  for (const auto& l : latencies)
    all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  const auto pct = [&](double p) {
    return all.empty()
               ? 0.0
               : all[std::min(all.size() - 1,
                              static_cast<std::size_t>(p * static_cast<double>(all.size())))];
  };
  std::printf(
      "clients=%u mode=%s%s%s scrapes=%zu failures=%u rate=%.0f/s p50=%.3fms p90=%.3fms "
      "p99=%.3fms max=%.3fms\n",
      o.clients, o.new_connection ? "new-connection" : "keep-alive", o.gzip ? "+gzip" : "",
      o.stagger ? "+stagger" : "", all.size(), failures.load(),
      static_cast<double>(all.size()) / wall, pct(0.50), pct(0.90), pct(0.99),
      all.empty() ? 0.0 : all.back());
  return failures.load() == 0 ? 0 : 1;
}
