#pragma once
// `joules serve`: a node exporter.  The sampler reads every GPU (and the CPU packages and DRAM
// RAPL can read) at the interval, with health readings; /metrics serialises its latest
// snapshot, so a scrape never waits for the driver and a scraper cannot make joules call the
// driver more often.  Runs until SIGINT or SIGTERM; SIGHUP has --web-config-file read again.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/composite/open_backend.hpp"
#include "carbon/carbon.hpp"
#include "http/listen_address.hpp"
#include "session/inference.hpp"

namespace joules::session {

// The port `joules serve` listens on unless --listen names one: outside the Prometheus
// exporters' range 9100-9999 (fully allocated) and below Linux's ephemeral ports (docs/metrics.md,
// "The default port"); dcgm-exporter's 9400 is left to dcgm-exporter.
inline constexpr std::uint16_t kDefaultServePort = 19400;

struct serve_settings {
  backend_options backend;
  exporter::listen_address listen{std::string(exporter::kDefaultListenHost), kDefaultServePort};
  std::chrono::milliseconds interval{1000};
  bool dcgm_compat = false;
  std::string hostname;  // the hostname label
  std::vector<std::pair<std::string, std::string>> labels;
  std::size_t max_connections = 64;
  carbon::factors carbon;
  inference_settings inference;  // --tokens-from: joules per token of inference servers
  // --output: monitor_sample JSONL (as monitor --json) every interval, rotated past
  // `output_max_bytes` (0: never) keeping `output_keep` older files (record/jsonl_sink.hpp).
  std::optional<std::string> output;
  std::uint64_t output_max_bytes = 0;
  unsigned output_keep = 1;
  // --web-config-file: TLS, client certificates, basic auth and headers of /metrics, in the
  // Prometheus exporter toolkit's format (http/web_config.hpp, docs/web-config.md).
  std::optional<std::string> web_config_file;
  // --kubernetes: pod, namespace and container labels from the kubelet's pod-resources API at
  // `kubelet_socket`, asked every `kubelet_interval` (docs/kubernetes.md).
  bool kubernetes = false;
  std::string kubelet_socket;
  std::chrono::milliseconds kubelet_interval{10000};
};

// Serves until SIGINT or SIGTERM; returns 0.  Throws fatal_error when the port cannot be bound
// or nothing can be read, usage_error when an @gpus= of --tokens-from names a GPU not served or
// the web configuration file is bad (before any device is opened or file truncated).
int serve(const serve_settings& settings);

}  // namespace joules::session
