#pragma once
// The exporters of a measured run (`run` and `wrap`): `--prometheus [HOST:]PORT` serves the
// run's /metrics while it runs, `--otlp URL` pushes the same metrics to an OpenTelemetry
// collector.  Both read the sampler's snapshots and the run's run_metrics; neither can stall
// the sampler or the child (docs/metrics.md).

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "export/metrics/metric_source.hpp"
#include "export/otlp/otlp_exporter.hpp"
#include "export/prometheus/prometheus_endpoint.hpp"
#include "http/http_client.hpp"
#include "http/listen_address.hpp"
#include "record/session_records.hpp"

namespace joules::session {

struct export_settings {
  std::optional<exporter::listen_address> prometheus;
  std::optional<exporter::http_url> otlp;
  exporter::http_tls otlp_tls;  // --otlp-ca-file, --otlp-client-cert, --otlp-client-key
  std::vector<std::pair<std::string, std::string>> otlp_headers;
  std::chrono::milliseconds otlp_interval{10000};

  bool any() const { return prometheus || otlp; }
};

// --otlp-header's KEY=VALUE: KEY an HTTP header name joules does not set itself, VALUE on one
// line.  Throws usage_error naming the value and what is accepted.
std::pair<std::string, std::string> parse_otlp_header(const std::string& text);
// --otlp's URL, with OTLP/HTTP's default path /v1/metrics when it has none.  Throws usage_error.
exporter::http_url parse_otlp_url(const std::string& text);
// A TLS file for OTLP (--otlp-ca-file, --otlp-client-cert, --otlp-client-key): readable, and a
// PEM file holding a `kind` block ("CERTIFICATE", "PRIVATE KEY"; an encrypted key is refused).
// Returns the path.  Throws usage_error naming `option`, the path and what is wrong.
std::string pem_file(const std::string& path, std::string_view option, std::string_view kind,
                     std::string_view what);
// The rules between the OTLP options once all are read: the TLS files only with an https://
// collector, a client certificate and its key together.  Throws usage_error.
void check_otlp_tls(const export_settings& s);

// The labels every exported series carries: `run_id` (when not empty), `hostname`, then the
// user's labels after the label policy (renames are printed once as notes).
exporter::label_set export_base_labels(const run_context& ctx);

// OTLP resource attributes: service.name, host.name, joules.run_id (when not empty), labels.
std::vector<std::pair<std::string, std::string>> otlp_resource(const run_context& ctx);

// Notes on stderr and the JSON of session_end's "exporters" object.
class exporters {
 public:
  // Binds the Prometheus port and resolves the collector unless a proxy will (input errors
  // surface here, before any child starts), and prints the /metrics address on stderr.
  exporters(const export_settings& settings, const exporter::source_factory& source,
            const run_context& ctx);
  ~exporters();
  exporters(const exporters&) = delete;
  exporters& operator=(const exporters&) = delete;

  void start();
  // The final OTLP push (within `budget`), then the server stops.  Idempotent.
  void finish(std::chrono::milliseconds budget = std::chrono::milliseconds(2000));

  // {"prometheus":{...},"otlp":{...}}, for session_end.
  std::string report_json() const;
  // A line for stderr when OTLP batches were lost; empty otherwise.
  std::string loss_line() const;

 private:
  std::unique_ptr<exporter::prometheus_endpoint> prometheus_;
  std::unique_ptr<exporter::otlp_exporter> otlp_;
  std::string otlp_url_;
};

}  // namespace joules::session
