// The options of run (and wrap): --interval, the outputs, labels, run id, live metrics, and the
// shared ones (src/cli/backend_options.cpp, src/cli/energy_options.cpp).

#include <fmt/format.h>

#include <algorithm>

#include "cli/shared_options.hpp"
#include "http/listen_address.hpp"
#include "session/identity.hpp"
#include "util/error.hpp"

namespace joules::cli {
namespace {

constexpr std::string_view kOutput = "Output";
constexpr std::string_view kExport = "Live metrics";

std::pair<std::string, std::string> run_label(const std::string& label,
                                              const session::measure_settings& s) {
  const auto eq = label.find('=');
  const std::string key = label.substr(0, eq);
  if (eq == std::string::npos || !session::valid_label_key(key)) {
    throw usage_error(fmt::format(
        "--label '{}': expected KEY=VALUE, KEY made of letters, digits and _ and not starting "
        "with a digit",
        label));
  }
  const auto& reserved = session::kReservedLabels;
  if (std::find(reserved.begin(), reserved.end(), key) != reserved.end()) {
    throw usage_error(fmt::format("--label '{}': {} is set by joules itself{}", label, key,
                                  key == "run_id" ? "; use --run-id" : ""));
  }
  if (std::any_of(s.labels.begin(), s.labels.end(),
                  [&](const auto& kv) { return kv.first == key; })) {
    throw usage_error(fmt::format("--label '{}': label {} is given twice", label, key));
  }
  return {key, label.substr(eq + 1)};
}

}  // namespace

void declare_measure(options::option_table& t, measure_options& out) {
  session::measure_settings& s = out.settings;
  declare_gpus(t, s.gpus);
  t.millis("interval",
           "Milliseconds between readings of every GPU. Energy comes from each GPU's energy "
           "counter where it has one, so the interval mostly sets the resolution of peak power "
           "and of GPUs measured by polling power.",
           "100; 20 when a GPU has no energy counter", 1, 60000, s.interval, &s.interval_given);
  declare_backend(t, s.backend);
  t.group(kOutput);
  CLI::Option* output =
      t.text("output", 'o', "FILE",
             "Write JSONL records (docs/jsonl-schema.md) to FILE, or to stdout with -. FILE is "
             "checked before the command starts and truncated unless --append.",
             "", s.output);
  t.needs(t.flag("append", 0, "Append to the --output file instead of truncating it.", s.append),
          output);
  t.excludes(
      t.flag("json", 0, "Write the JSONL records to stderr (instead of the summary line).", s.json),
      output);
  CLI::Option* samples =
      t.millis("samples-interval",
               "Write `sample` records (power, energy, utilisation, temperature and clocks of each "
               "device: min, mean and max) over buckets of MS milliseconds; the buckets widen as "
               "the run grows, so a 24-hour run writes a few thousand (docs/jsonl-schema.md).",
               "1000 when --output is a file; none otherwise", 10, 3600000, out.samples_interval,
               &out.samples_given);
  t.excludes(t.flag("no-samples", 0, "Write no `sample` records.", out.no_samples), samples);
  t.flag("quiet", 'q', "Do not print the summary line.", s.quiet);
  t.repeated("label", "KEY=VALUE",
             "Attach a label to the run's records. KEY is letters, digits and _, not starting "
             "with a digit.",
             [&s](const std::string& v) { s.labels.push_back(run_label(v, s)); });
  t.text("run-id", 0, "ID",
         "Identifier on every record of the run; give every node of a multi-node run the same "
         "one.",
         "JOULES_RUN_ID, else SLURM_JOB_ID.SLURM_STEP_ID, else random",
         [&out](const std::string& v) {
           if (!session::valid_run_id(v)) {
             throw usage_error(fmt::format(
                 "--run-id '{}': expected 1 to 128 printable characters without spaces", v));
           }
           out.run_id = v;
         });
  t.group(kExport);
  session::export_settings& e = s.exports;
  t.text("prometheus", 0, "[HOST:]PORT",
         "Serve the run's metrics at http://HOST:PORT/metrics while it runs (docs/metrics.md). "
         "HOST is 127.0.0.1 unless given; port 0 picks a free port. The address is printed on "
         "stderr.",
         "", [&e](const std::string& v) {
           e.prometheus = exporter::parse_listen_address(v, "--prometheus");
         });
  CLI::Option* otlp = t.text(
      "otlp", 0, "URL",
      "Push the run's metrics to an OpenTelemetry collector over OTLP/HTTP with JSON, e.g. "
      "http://127.0.0.1:4318 (/v1/metrics is added when the URL has no path). A down or slow "
      "collector never holds up the command; batches not delivered are counted in session_end.",
      "", [&e](const std::string& v) { e.otlp = session::parse_otlp_url(v); });
  t.needs(t.repeated("otlp-header", "KEY=VALUE", "An HTTP header sent with every OTLP request.",
                     [&e](const std::string& v) {
                       e.otlp_headers.push_back(session::parse_otlp_header(v));
                     }),
          otlp);
  t.needs(t.millis("otlp-interval", "Milliseconds between OTLP pushes.", "10000", 100, 3600000,
                   e.otlp_interval),
          otlp);
  declare_sim(t, s.backend);
  declare_components(t, s.backend.components,
                     "gpu, plus cpu and dram where RAPL can be read (what cannot is said in the "
                     "summary)");
  declare_carbon(t, out.carbon);
}

session::measure_settings finish_measure(measure_options& o, std::vector<std::string> command,
                                         std::string_view subcommand) {
  session::measure_settings s = o.settings;
  s.command = std::move(command);
  if (s.command.empty()) {
    throw usage_error(
        fmt::format("joules {} needs a command to run, e.g. joules {} -- python train.py",
                    subcommand, subcommand));
  }
  s.run_id = session::resolve_run_id(o.run_id);
  if (!session::valid_run_id(s.run_id)) {
    throw usage_error(fmt::format(
        "run id '{}' (from the environment): expected 1 to 128 printable characters without "
        "spaces",
        s.run_id));
  }
  s.carbon = resolve_carbon(o.carbon);
  // Samples are what a report draws power over time from: on by default where the records go to
  // a file; a stream (--output -, --json) gets them only when asked, not a record a second.
  if (!o.no_samples && (o.samples_given || (s.output && *s.output != "-"))) {
    s.samples_interval = o.samples_interval;
    s.samples_default = !o.samples_given;
  }
  return s;
}

}  // namespace joules::cli
