// --prometheus and the OTLP options of run and wrap (docs/metrics.md).

#include "cli/shared_options.hpp"
#include "http/listen_address.hpp"
#include "util/error.hpp"

namespace joules::cli {
namespace {

constexpr std::string_view kExport = "Live metrics";

}  // namespace

void declare_exports(options::option_table& t, session::export_settings& e) {
  t.group(kExport);
  t.text("prometheus", 0, "[HOST:]PORT",
         "Serve the run's metrics at http://HOST:PORT/metrics while it runs (docs/metrics.md). "
         "HOST is 127.0.0.1 unless given; port 0 picks a free port. The address is printed on "
         "stderr.",
         "", [&e](const std::string& v) {
           e.prometheus = exporter::parse_listen_address(v, "--prometheus");
         });
  CLI::Option* otlp = t.text(
      "otlp", 0, "URL",
      "Push the run's metrics to an OpenTelemetry collector over OTLP/HTTP with gzip-compressed "
      "JSON, e.g. http://127.0.0.1:4318 or https://otel.example.com (/v1/metrics is added when "
      "the URL has no path). Proxies come from https_proxy, http_proxy and no_proxy. A down or "
      "slow collector never holds up the command (joules waits at most 2 s for it at the end); "
      "429, 502, 503, 504 and lost connections are retried; batches not delivered are counted in "
      "session_end.",
      "", [&e](const std::string& v) { e.otlp = session::parse_otlp_url(v); });
  t.needs(t.repeated("otlp-header", "KEY=VALUE",
                     "An HTTP header sent with every OTLP request, e.g. an API key; never "
                     "printed.",
                     [&e](const std::string& v) {
                       e.otlp_headers.push_back(session::parse_otlp_header(v));
                     }),
          otlp);
  t.needs(t.millis("otlp-interval", "Milliseconds between OTLP pushes.", "10000", 100, 3600000,
                   e.otlp_interval),
          otlp);
  t.needs(t.text("otlp-ca-file", 0, "FILE",
                 "Trust only the CA certificates in FILE (PEM) for an https:// --otlp collector.",
                 "the system's CA store",
                 [&e](const std::string& v) {
                   e.otlp_tls.ca_file =
                       session::pem_file(v, "--otlp-ca-file", "CERTIFICATE", "CA certificates");
                 }),
          otlp);
  CLI::Option* cert =
      t.text("otlp-client-cert", 0, "FILE",
             "Client certificate (PEM) for mutual TLS with an https:// --otlp collector.", "",
             [&e](const std::string& v) {
               e.otlp_tls.client_cert =
                   session::pem_file(v, "--otlp-client-cert", "CERTIFICATE", "a certificate");
             });
  CLI::Option* key = t.text(
      "otlp-client-key", 0, "FILE", "The unencrypted private key (PEM) of --otlp-client-cert.", "",
      [&e](const std::string& v) {
        e.otlp_tls.client_key =
            session::pem_file(v, "--otlp-client-key", "PRIVATE KEY", "a private key");
      });
  t.needs(cert, otlp);
  t.needs(key, otlp);
  for (CLI::Option* o : {cert, key}) {
    t.rule(o, "Give both or neither.", [cert, key] {
      if ((cert->count() == 0) != (key->count() == 0))
        throw usage_error(
            "--otlp-client-cert and --otlp-client-key go together: give both or neither");
    });
  }
}

}  // namespace joules::cli

namespace joules::cli {

CLI::Option* declare_rotated_output(options::option_table& t, std::string_view output_help,
                                    std::optional<std::string>& path, std::uint64_t& max_bytes,
                                    unsigned& keep) {
  t.group("Output file");
  CLI::Option* output =
      t.text("output", 'o', "FILE", output_help, "", [&path](const std::string& v) { path = v; });
  t.needs(t.count("output-max-size", "BYTES",
                  "Rotate --output before a record would take it past BYTES: FILE becomes "
                  "FILE.1 (FILE.1 becomes FILE.2, ...) and a new FILE is started. 0: never.",
                  "0", 0, UINT64_MAX, "bytes", [&max_bytes](std::uint64_t n) { max_bytes = n; }),
          output);
  t.needs(
      t.count("output-keep", "N",
              "Rotated files kept beside --output (FILE.1 to FILE.N); older ones are "
              "removed.",
              "1", 0, 1000, "files", [&keep](std::uint64_t n) { keep = static_cast<unsigned>(n); }),
      output);
  return output;
}

}  // namespace joules::cli
