#pragma once
// /metrics over HTTP for one metric source: the http_server, two expositions owned by its
// thread, and joules' own scrape statistics.
//
// A scrape takes the source's latest state (metric_source::update()).  When it is new (a new
// sampler snapshot, a run's new window or step), the per-state families are refilled and
// rendered once into an immutable text that the scrapes of the same state share: the server
// sends it from where it lies, with the head and a small per-scrape tail around it (joules_up,
// the scrape count and duration, the age of the readings).  So a scrape costs the rendering of a
// few lines, and the rendering of the rest is paid once per state, not once per scrape; a scrape
// never renders more often than the state changes, and never calls hardware.  The gzip encoding
// of the shared text is made once too, at the first scrape that accepts gzip.
//
// Thread-safety: construct, start() and stop() from one thread; address() and stats() from any.

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "export/metrics/exposition.hpp"
#include "export/metrics/metric_source.hpp"
#include "http/gzip_member.hpp"
#include "http/http_server.hpp"

namespace joules::exporter {

class prometheus_endpoint {
 public:
  // Binds (port() is known from here on; scrapes queue until start()).  Throws as http_server.
  prometheus_endpoint(const http_server_options& options, const source_factory& source,
                      const label_set& base);
  prometheus_endpoint(const listen_address& address, const source_factory& source,
                      const label_set& base);
  ~prometheus_endpoint();
  prometheus_endpoint(const prometheus_endpoint&) = delete;
  prometheus_endpoint& operator=(const prometheus_endpoint&) = delete;

  void start();
  void stop();
  // The web configuration file of the options, read again now (http_server::reload_web_config).
  void reload_web_config() { server_->reload_web_config(); }
  const listen_address& address() const { return server_->address(); }
  http_server_stats stats() const { return server_->stats(); }
  // Times the per-state families were rendered (for tests: at most once per state).
  std::uint64_t renders() const { return renders_.load(); }

 private:
  metrics_body write(std::string& tail, const metrics_request& request);

  exposition per_state_;
  exposition per_scrape_;
  std::unique_ptr<metric_source> source_;
  std::shared_ptr<const web_config_reloader> web_config_;  // of the options, or null
  // Written and read by the server thread only.
  std::shared_ptr<const std::string> rendered_;
  std::shared_ptr<const gzip_prefix> gzipped_;  // of rendered_, made on demand
  bool stale_ = true;                           // rendered_ is not of the state taken last
  std::string tail_text_;
  std::uint64_t scrapes_ = 0;
  std::optional<double> last_scrape_s_;
  std::atomic<std::uint64_t> renders_{0};
  std::unique_ptr<http_server> server_;
};

}  // namespace joules::exporter
