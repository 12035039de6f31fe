#pragma once
// /metrics over HTTP for one metric source: the http_server, an exposition owned by its thread,
// and joules' own scrape statistics.  Each scrape clears the exposition, refills it from the
// latest published state and serialises it; nothing here calls hardware.
//
// Thread-safety: construct, start() and stop() from one thread; address() and stats() from any.

#include <cstdint>
#include <memory>
#include <optional>

#include "export/exposition.hpp"
#include "export/http_server.hpp"
#include "export/metric_source.hpp"

namespace joules::exporter {

class prometheus_endpoint {
 public:
  // Binds (port() is known from here on; scrapes queue until start()).  Throws as http_server.
  prometheus_endpoint(const listen_address& address, const source_factory& source,
                      const label_set& base);
  ~prometheus_endpoint();
  prometheus_endpoint(const prometheus_endpoint&) = delete;
  prometheus_endpoint& operator=(const prometheus_endpoint&) = delete;

  void start();
  void stop();
  const listen_address& address() const { return server_->address(); }
  http_server_stats stats() const { return server_->stats(); }

 private:
  void write(std::string& body);

  exposition exposition_;
  std::unique_ptr<metric_source> source_;
  // Written and read by the server thread only.
  std::uint64_t scrapes_ = 0;
  std::optional<double> last_scrape_s_;
  std::unique_ptr<http_server> server_;
};

}  // namespace joules::exporter
