// `joules serve`: a node exporter, Prometheus /metrics for every GPU (and CPU/DRAM).

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/shared_options.hpp"
#include "kubelet/pod_watcher.hpp"
#include "session/identity.hpp"
#include "session/serve.hpp"
#include "util/error.hpp"

namespace joules::cli {
namespace {

constexpr options::command_text kServeText{
    "serve", "node exporter: Prometheus /metrics for every GPU (and CPU/DRAM)", "[OPTIONS]",
    "Serves http://127.0.0.1:19400/metrics in the Prometheus text format for every GPU of the "
    "machine: power, energy, utilisation, memory, temperatures, clocks, throttle reasons, ECC "
    "and remapped rows, PCIe, GPM activity where the GPU has it; CPU package and DRAM energy "
    "where RAPL can be read (--components), and the state of each component; the energy in kWh "
    "after --pue, its CO2e (--region or --carbon-intensity) and cost (--price-per-kwh), with "
    "their provenance as labels; and joules' own health (joules_up, scrapes, scrape duration). "
    "docs/metrics.md lists every metric.\n"
    "One thread reads the hardware at --interval; the metrics are rendered once per reading and "
    "shared by the scrapes that follow, so scrapers never call the driver. Runs until SIGINT or "
    "SIGTERM and exits 0; SIGHUP reads --web-config-file again. packaging/joules-serve.service "
    "runs it under systemd.",
    "joules serve\n"
    "joules serve --listen 0.0.0.0:19400 --label cluster=a\n"
    "joules serve --listen 0.0.0.0:9400 --dcgm-compat   # in place of dcgm-exporter\n"
    "joules serve --region DE --pue 1.2 --price-per-kwh 0.3 --currency EUR\n"
    "joules serve --backend sim --sim-gpus 8 --listen 127.0.0.1:0\n"
    "joules serve --tokens-from http://127.0.0.1:8000/metrics\n"
    "joules serve --web-config-file web.yml   # who may scrape: docs/web-config.md\n"
    "joules serve --listen 0.0.0.0:19400 --kubernetes   # with pod labels\n"
    "joules serve --output gpus.jsonl --output-max-size 100000000 --output-keep 5"};

class serve_command final : public options::command {
 public:
  const options::command_text& text() const override { return kServeText; }
  void declare(options::option_table& t) override;
  int run(std::vector<std::string>) override {
    if (!hostname_) s_.hostname = session::host_name();
    s_.carbon = resolve_carbon(carbon_);
    return session::serve(s_);
  }

 private:
  session::serve_settings s_;
  std::optional<std::string> hostname_;
  carbon::settings carbon_;
};

void serve_command::declare(options::option_table& t) {
  t.group("Serving");
  t.text("listen", 0, "[HOST:]PORT",
         "Address of /metrics. HOST is 127.0.0.1 unless given (0.0.0.0 or [::] for every "
         "interface); port 0 picks a free port. The address is printed on stderr.",
         "127.0.0.1:19400", [this](const std::string& v) {
           s_.listen = exporter::parse_listen_address(v, "--listen");
         });
  t.millis("interval",
           "Milliseconds between readings of every GPU's power and energy; health readings "
           "(utilisation, temperatures, clocks, ECC, ...) every max(MS, 1000).",
           "1000", 10, 60000, s_.interval);
  t.flag("dcgm-compat", 0,
         "Also expose dcgm-exporter's metric names and labels (DCGM_FI_DEV_POWER_USAGE, ...), so "
         "that NVIDIA's Grafana dashboard works unchanged.",
         s_.dcgm_compat);
  t.flag("kubernetes", 0,
         "Label each GPU and MIG device with the pod, namespace and container that hold it, from "
         "the kubelet's pod-resources API (asked every --kubelet-interval; docs/kubernetes.md). "
         "A kubelet that does not answer costs the labels, with a note on stderr.",
         s_.kubernetes);
  t.text("kubelet-socket", 0, "PATH",
         "The kubelet's pod-resources socket, for --kubernetes (given alone, it implies "
         "--kubernetes).",
         std::string(kubelet::kDefaultKubeletSocket), [this](const std::string& v) {
           if (v.empty()) throw usage_error("--kubelet-socket '': expected a path");
           s_.kubelet_socket = v;
           s_.kubernetes = true;
         });
  t.millis("kubelet-interval",
           "Milliseconds between two questions to the kubelet, for --kubernetes; each waits at "
           "most min(MS, 5000).",
           "10000", 100, 600000, s_.kubelet_interval);
  t.text("hostname", 0, "NAME", "The hostname label on every series.",
         "JOULES_HOSTNAME, else the machine's hostname", [this](const std::string& v) {
           if (v.empty()) throw usage_error("--hostname '': expected a name");
           s_.hostname = v;
           hostname_ = v;
         });
  t.repeated("label", "KEY=VALUE",
             "A label on every series (e.g. cluster=a). KEY is sanitised into a label name; one "
             "that joules sets itself is renamed label_KEY.",
             [this](const std::string& label) {
               const auto eq = label.find('=');
               if (eq == std::string::npos || eq == 0)
                 throw usage_error(fmt::format("--label '{}': expected KEY=VALUE", label));
               s_.labels.emplace_back(label.substr(0, eq), label.substr(eq + 1));
             });
  t.count("max-connections", "N",
          "Connections served at once. Beyond that an idle or slow one is closed to make room, or "
          "the new one gets 503.",
          "64", 1, 4096, "a number of connections",
          [this](std::uint64_t n) { s_.max_connections = static_cast<std::size_t>(n); });
  t.text("web-config-file", 0, "FILE",
         "Who may scrape: TLS (certificate and key, client certificates, versions), basic auth "
         "with bcrypt hashes and extra response headers, in the web configuration format of the "
         "Prometheus exporter toolkit (node_exporter's --web.config.file, dcgm-exporter's "
         "--web-config-file). A bad file is an error at start. Read again, as the toolkit does, "
         "when it or a file it names changes (looked at once a second at most) and at SIGHUP: "
         "renewed certificates and changed users take effect without a restart; a bad change "
         "is a warning, and the last good configuration is served on. docs/web-config.md has "
         "the format and an example.",
         "", [this](const std::string& v) {
           if (v.empty()) throw usage_error("--web-config-file '': expected a file");
           s_.web_config_file = v;
         });
  declare_rotated_output(t,
                         "Also write what is served as JSONL to FILE, one monitor_sample object "
                         "per --interval (as joules monitor --json writes them); FILE is "
                         "truncated first.",
                         s_.output, s_.output_max_bytes, s_.output_keep);
  declare_backend(t, s_.backend);
  declare_sim(t, s_.backend);
  declare_components(t, s_.backend.components,
                     "gpu, plus cpu and dram where RAPL can be read; counters that cannot be "
                     "read are named on stderr, with the fix");
  declare_carbon(t, carbon_);
  declare_tokens(t, s_.inference, "serve");
}

}  // namespace

std::unique_ptr<options::command> make_serve_command() {
  return std::make_unique<serve_command>();
}

}  // namespace joules::cli
