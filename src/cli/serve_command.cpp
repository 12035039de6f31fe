// `joules serve`: a node exporter.  The sampler reads every GPU (and the CPU packages and DRAM
// RAPL can read) at --interval, with health readings; /metrics serialises its latest snapshot,
// so a scrape never waits for the driver and a scraper cannot make joules call NVML more often.
// Runs until SIGINT or SIGTERM.

#include <fmt/format.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "backends/sim/sim_backend.hpp"
#include "cli/commands.hpp"
#include "cli/energy_options.hpp"
#include "cli/measure.hpp"
#include "export/metrics/label_policy.hpp"
#include "export/metrics/metric_source.hpp"
#include "export/prometheus/prometheus_endpoint.hpp"
#include "sampler/sampler.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

namespace joules::cli {
namespace {

constexpr std::string_view kServe = "Serving";

// A boundary every so often closes the accounting window, so readings older than it are
// dropped: a node exporter runs for months in bounded memory.
constexpr std::chrono::seconds kWindow{300};

// The serve options, then the backend's, the components' and carbon's (shared with run and wrap:
// cli/measure.hpp, cli/energy_options.hpp), then --help.
std::vector<option_spec> make_serve_options() {
  std::vector<option_spec> o = {
      {"listen", 0, "[HOST:]PORT",
       "Address of /metrics. HOST is 127.0.0.1 unless given (0.0.0.0 or [::] for every "
       "interface); port 0 picks a free port. The address is printed on stderr.",
       "127.0.0.1:9400", false, kServe},
      {"interval", 0, "MS",
       "Milliseconds between readings of every GPU's power and energy, 10 to 60000; health "
       "readings (utilisation, temperatures, clocks, ECC, ...) every max(MS, 1000).",
       "1000", false, kServe},
      {"dcgm-compat", 0, "",
       "Also expose dcgm-exporter's metric names and labels (DCGM_FI_DEV_POWER_USAGE, ...), so "
       "that NVIDIA's Grafana dashboard works unchanged.",
       "", false, kServe},
      {"hostname", 0, "NAME", "The hostname label on every series.",
       "JOULES_HOSTNAME, else the machine's hostname", false, kServe},
      {"label", 0, "KEY=VALUE",
       "A label on every series (e.g. cluster=a). KEY is sanitised into a label name; one that "
       "joules sets itself is renamed label_KEY.",
       "", true, kServe},
      {"max-connections", 0, "N",
       "Connections served at once, 1 to 4096. Beyond that an idle or slow one is closed to make "
       "room, or the new one gets 503.",
       "64", false, kServe},
  };
  const auto append = [&o](const auto& more) { o.insert(o.end(), more.begin(), more.end()); };
  append(backend_option_specs());
  append(component_option_specs());
  append(carbon_option_specs());
  o.push_back({"help", 'h', "", "Print this help and exit.", "", false, "Other"});
  return o;
}

const std::vector<option_spec>& serve_options() {
  static const std::vector<option_spec> options = make_serve_options();
  return options;
}

struct serve_settings {
  backend_options backend;
  exporter::listen_address listen{std::string(exporter::kDefaultListenHost), 9400};
  std::chrono::milliseconds interval{1000};
  bool dcgm_compat = false;
  std::string hostname;
  std::vector<std::pair<std::string, std::string>> labels;
  std::size_t max_connections = 64;
  carbon::factors carbon;
};

std::string host_name() {
  if (const char* h = std::getenv("JOULES_HOSTNAME"); h != nullptr && *h != '\0') return h;
  std::array<char, 256> buf{};
  if (gethostname(buf.data(), buf.size() - 1) != 0) return "unknown";
  return buf.data();
}

serve_settings read_serve_settings(const parsed_args& args) {
  serve_settings s;
  if (auto v = args.get("listen")) s.listen = exporter::parse_listen_address(*v, "--listen");
  if (auto v = args.get("interval")) {
    const auto ms = parse_uint(*v, 10, 60000);
    if (!ms) {
      throw usage_error(fmt::format(
          "--interval '{}': expected a whole number of milliseconds from 10 to 60000", *v));
    }
    s.interval = std::chrono::milliseconds(*ms);
  }
  s.dcgm_compat = args.has("dcgm-compat");
  s.hostname = args.get("hostname").value_or(host_name());
  if (s.hostname.empty()) throw usage_error("--hostname '': expected a name");
  for (const auto& label : args.all("label")) {
    const auto eq = label.find('=');
    if (eq == std::string::npos || eq == 0)
      throw usage_error(fmt::format("--label '{}': expected KEY=VALUE", label));
    s.labels.emplace_back(label.substr(0, eq), label.substr(eq + 1));
  }
  if (auto v = args.get("max-connections")) {
    const auto n = parse_uint(*v, 1, 4096);
    if (!n) {
      throw usage_error(fmt::format(
          "--max-connections '{}': expected a number of connections from 1 to 4096", *v));
    }
    s.max_connections = static_cast<std::size_t>(*n);
  }
  s.backend = read_backend_options(args);
  read_component_options(args, s.backend.components);
  s.carbon = carbon::resolve(read_carbon_settings(args));
  return s;
}

void note(const std::string& text) {
  std::fprintf(stderr, "joules: note: %s\n", text.c_str());
}

// SIGINT and SIGTERM (blocked in every thread since app::main) as a file descriptor.
int stop_signal_fd() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  const int fd = signalfd(-1, &set, SFD_CLOEXEC);
  if (fd < 0) throw fatal_error(fmt::format("signalfd: {}", std::strerror(errno)));
  return fd;
}

}  // namespace

const command_spec& serve_spec() {
  static const command_spec spec{
      "serve",
      "node exporter: Prometheus /metrics for every GPU (and CPU/DRAM)",
      "[OPTIONS]",
      "Serves http://127.0.0.1:9400/metrics in the Prometheus text format for every GPU of the "
      "machine: power, energy, utilisation, memory, temperatures, clocks, throttle reasons, ECC "
      "and remapped rows, PCIe, GPM activity where the GPU has it; CPU package and DRAM energy "
      "where RAPL can be read (--components), and the state of each component; the energy in kWh "
      "after --pue, its CO2e (--region or --carbon-intensity) and cost (--price-per-kwh), with "
      "their provenance as labels; and joules' own health (joules_up, scrapes, scrape duration). "
      "docs/metrics.md lists every metric.\n"
      "One thread reads the hardware at --interval; the metrics are rendered once per reading "
      "and shared by the scrapes that follow, so scrapers never call the driver. Runs until "
      "SIGINT or SIGTERM and exits 0. packaging/joules-serve.service runs it under systemd.",
      serve_options(),
      positional_kind::none,
      "joules serve\n"
      "joules serve --listen 0.0.0.0:9400 --dcgm-compat --label cluster=a\n"
      "joules serve --region DE --pue 1.2 --price-per-kwh 0.3 --currency EUR\n"
      "joules serve --backend sim --sim-gpus 8 --listen 127.0.0.1:0"};
  return spec;
}

int serve_main(const parsed_args& args) {
  const serve_settings s = read_serve_settings(args);
  sampler_options options;
  options.interval = s.interval;
  options.health_interval = std::max(s.interval, std::chrono::milliseconds(1000));
  sampler readings([b = s.backend] { return open_backend(b); }, options);
  const backend& hw = readings.hardware();
  for (const auto& n : hw.notices())
    note(n);
  for (const auto& c : hw.components()) {
    // Counters that exist but cannot be read get their fix said once, as run and wrap do.
    if (!c.fix.empty() && c.method == energy_method::none) {
      note(fmt::format("{} energy is not measured: {}; {}",
                       c.kind == device_kind::cpu ? "CPU" : "DRAM", c.detail, c.fix));
    }
  }

  std::vector<std::size_t> served;
  std::vector<device_info> devices;
  for (std::size_t i = 0; i < hw.devices().size(); ++i) {
    const device_info& d = hw.devices()[i];
    if (d.method() == energy_method::none) {
      note(fmt::format("{} {} has neither an energy counter nor a power reading; it is not served",
                       d.key(), d.name));
      continue;
    }
    served.push_back(i);
    devices.push_back(d);
  }
  if (served.empty()) throw fatal_error("no device can be read (no energy counter, no power)");
  const auto gpus = static_cast<std::size_t>(
      std::count_if(devices.begin(), devices.end(),
                    [](const device_info& d) { return d.kind == device_kind::gpu; }));

  exporter::label_set base;
  base.add("hostname", s.hostname);
  const auto user = exporter::apply_label_policy(s.labels, exporter::kExporterLabelNames);
  for (const auto& line : user.renamed)
    note(line);
  for (const auto& [k, v] : user.labels)
    base.add(k, v);

  const double stale_after_s =
      std::max(5.0, 3.0 * std::chrono::duration<double>(*options.health_interval).count());
  exporter::http_server_options server;
  server.address = s.listen;
  server.max_connections = s.max_connections;
  exporter::prometheus_endpoint endpoint(
      server,
      exporter::node_source(
          {&readings, devices, hw.meta(), s.dcgm_compat, stale_after_s, s.carbon,
           exporter::component_states(s.backend.components, hw.components(), gpus)}),
      base);
  const int signals = stop_signal_fd();

  readings.on_window([](const window_result&) {});  // windows only bound memory here
  readings.start(served);
  readings.boundary(steady::now());
  endpoint.start();
  std::fprintf(stderr, "joules: serving %zu GPU(s)%s at http://%s/metrics\n", gpus,
               devices.size() > gpus ? " and CPU/DRAM" : "", endpoint.address().text().c_str());
  std::fflush(stderr);

  mono_time next_boundary = steady::now() + kWindow;
  while (true) {
    const auto wait =
        std::chrono::duration_cast<std::chrono::milliseconds>(next_boundary - steady::now());
    pollfd p{signals, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::max<long long>(0, wait.count())));
    if (n > 0) break;
    if (n < 0 && errno != EINTR) break;
    if (steady::now() >= next_boundary) {
      readings.boundary(steady::now());
      next_boundary += kWindow;
    }
  }
  close(signals);
  endpoint.stop();
  readings.finish(steady::now());
  if (readings.abandoned()) {
    // The sampler is stuck in a driver call that never returned; leave without waiting for it.
    std::fflush(nullptr);
    std::_Exit(0);
  }
  return 0;
}

}  // namespace joules::cli
