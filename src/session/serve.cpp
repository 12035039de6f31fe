#include "session/serve.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "export/metrics/label_policy.hpp"
#include "export/metrics/metric_source.hpp"
#include "export/prometheus/prometheus_endpoint.hpp"
#include "http/web_config_reload.hpp"
#include "kubelet/pod_watcher.hpp"
#include "monitor/live.hpp"
#include "monitor/view.hpp"
#include "record/jsonl_sink.hpp"
#include "sampler/sampler.hpp"
#include "term/messages.hpp"
#include "util/clock.hpp"
#include "util/error.hpp"

namespace joules::session {
namespace {

// A boundary every so often closes the accounting window, so readings older than it are
// dropped: a node exporter runs for months in bounded memory.
constexpr std::chrono::seconds kWindow{300};

// SIGINT and SIGTERM, which stop serve, and SIGHUP, which has the web configuration file read
// again (all three blocked in every thread since app::main), as a file descriptor.
int serve_signal_fd() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  const int fd = signalfd(-1, &set, SFD_CLOEXEC);
  if (fd < 0) throw fatal_error(fmt::format("signalfd: {}", std::strerror(errno)));
  return fd;
}

// The web configuration file, read and checked whole (certificates, key, client CA, hashes)
// for the server, which reads it again when it changes; one usage_error for anything wrong in it.
void apply_web_config(const std::string& file, exporter::http_server_options& server) {
  server.web_config = std::make_shared<exporter::web_config_reloader>(
      file, [](bool failed, const std::string& line) {
        if (failed) {
          term::print_warning(line);
        } else {
          term::print_note(line);
        }
      });
}

}  // namespace

int serve(const serve_settings& s) {
  exporter::http_server_options server;
  if (s.web_config_file) apply_web_config(*s.web_config_file, server);
  sampler_options options;
  options.interval = s.interval;
  options.health_interval = std::max(s.interval, std::chrono::milliseconds(1000));
  sampler readings([b = s.backend] { return open_backend(b); }, options);
  const backend& hw = readings.hardware();
  for (const auto& n : hw.notices())
    term::print_note(n);
  for (const auto& c : hw.components()) {
    // Counters that exist but cannot be read get their fix said once, as run and wrap do.
    if (!c.fix.empty() && c.method == energy_method::none) {
      term::print_note(fmt::format("{} energy is not measured: {}; {}",
                                   c.kind == device_kind::cpu ? "CPU" : "DRAM", c.detail, c.fix));
    }
  }

  std::vector<std::size_t> served;
  std::vector<device_info> devices;
  for (std::size_t i = 0; i < hw.devices().size(); ++i) {
    const device_info& d = hw.devices()[i];
    // A GPU that could not be read at open is served as lost (joules_gpu_lost 1), as one that
    // is lost later.
    if (d.method() == energy_method::none && d.unreadable.empty()) {
      term::print_note(
          fmt::format("{} {} has neither an energy counter nor a power reading; it is not served",
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
    term::print_note(line);
  for (const auto& [k, v] : user.labels)
    base.add(k, v);

  std::unique_ptr<inference_tracker> inference;
  if (s.inference.any()) {
    inference_tracker::hooks h;
    h.notice = [](const std::string& line) { term::print_note(line); };
    inference = std::make_unique<inference_tracker>(s.inference, readings, devices, nullptr, h);
  }

  // --kubernetes: which pod holds which GPU, asked on its own thread; a scrape reads its last
  // answer.  A call never outlasts the period, nor 5 s.
  std::unique_ptr<kubelet::pod_watcher> pods;
  if (s.kubernetes) {
    pods = std::make_unique<kubelet::pod_watcher>(
        s.kubelet_socket.empty() ? std::string(kubelet::kDefaultKubeletSocket) : s.kubelet_socket,
        s.kubelet_interval,
        std::min<std::chrono::milliseconds>(s.kubelet_interval, std::chrono::seconds(5)),
        [](const std::string& line) { term::print_note(line); });
  }

  const double stale_after_s =
      std::max(5.0, 3.0 * std::chrono::duration<double>(*options.health_interval).count());
  server.address = s.listen;
  server.max_connections = s.max_connections;
  exporter::node_source_config node{
      &readings,
      devices,
      hw.meta(),
      s.dcgm_compat,
      stale_after_s,
      s.carbon,
      inference ? &inference->board() : nullptr,
      exporter::component_states(s.backend.components, hw.components(), gpus,
                                 exporter::gpus_simulated(devices)),
      {}};
  if (pods) node.pods = [w = pods.get()] { return w->current(); };
  exporter::prometheus_endpoint endpoint(server, exporter::node_source(std::move(node)), base);
  // The port is bound: only now is --output truncated.
  std::optional<jsonl_sink> sink;
  if (s.output) {
    sink.emplace(jsonl_sink::open_file(*s.output, jsonl_sink::mode::truncate,
                                       {s.output_max_bytes, s.output_keep}));
  }
  const int signals = serve_signal_fd();

  readings.on_window([](const window_result&) {});  // windows only bound memory here
  readings.start(served);
  // --output: monitor's JSON samples of what is served, one per interval.
  std::optional<monitor::live_model> samples;
  if (sink) samples.emplace(readings, served, s.interval, /*keys=*/false, s.hostname);
  readings.boundary(steady::now());
  if (inference) inference->start(steady::now());
  endpoint.start();
  std::fprintf(stderr, "joules: serving %zu GPU(s)%s at %s://%s/metrics\n", gpus,
               devices.size() > gpus ? " and CPU/DRAM" : "",
               server.web_config && server.web_config->tls_enabled() ? "https" : "http",
               endpoint.address().text().c_str());
  std::fflush(stderr);

  mono_time next_boundary = steady::now() + kWindow;
  // Samples on a fixed grid (next += interval), a little after the sampler's tick of the slot.
  mono_time next_sample = steady::now() + s.interval + s.interval / 4;
  while (true) {
    const mono_time wake = samples ? std::min(next_boundary, next_sample) : next_boundary;
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(wake - steady::now());
    pollfd p{signals, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::max<long long>(0, wait.count())));
    if (n > 0) {
      signalfd_siginfo info{};
      const auto got = ::read(signals, &info, sizeof info);
      if (got != static_cast<ssize_t>(sizeof info) || info.ssi_signo != SIGHUP) break;
      // SIGHUP: the web configuration file, read again now (nothing to read without one).
      endpoint.reload_web_config();
      continue;
    }
    if (n < 0 && errno != EINTR) break;
    const mono_time now = steady::now();
    if (samples && now >= next_sample) {
      std::string line =
          monitor::json_sample(samples->update(), iso8601_utc(std::chrono::system_clock::now()));
      while (!line.empty() && line.back() == '\n')
        line.pop_back();
      sink->write(line);
      while (next_sample <= now)
        next_sample += s.interval;  // a sample that overran skips the slots it missed
    }
    if (now >= next_boundary) {
      readings.boundary(now);
      next_boundary += kWindow;
    }
  }
  close(signals);
  endpoint.stop();
  if (inference) inference->finish(steady::now());
  readings.finish(steady::now());
  if (readings.abandoned()) {
    // The sampler is stuck in a driver call that never returned; leave without waiting for it.
    std::fflush(nullptr);
    std::_Exit(0);
  }
  return 0;
}

}  // namespace joules::session
