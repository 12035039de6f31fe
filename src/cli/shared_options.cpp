#include "cli/shared_options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "backends/sim/sim_backend.hpp"
#include "http/listen_address.hpp"
#include "session/identity.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

namespace joules::cli {
namespace {

constexpr std::string_view kMeasurement = "Measurement";
constexpr std::string_view kOutput = "Output";
constexpr std::string_view kSim = "Simulated GPUs (--backend sim)";
constexpr std::string_view kExport = "Live metrics";
constexpr std::string_view kComponents = "CPU and DRAM (RAPL)";
constexpr std::string_view kCarbon = "Carbon and cost";

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

void declare_backend(option_table& t, backend_options& out) {
  t.group(kMeasurement);
  t.choice("backend", "NAME",
           "Where readings come from: auto (NVML; fails with a clear message when there is no "
           "GPU), nvml, or sim (simulated GPUs, a documented model for trying joules without a "
           "GPU).",
           "auto", {"auto", "nvml", "sim"}, out.name);
  t.text("nvml-library", 0, "PATH", "The NVML library to load.",
         "JOULES_NVML_LIBRARY, else libnvidia-ml.so.1 from the loader's search path",
         [&out](const std::string& v) { out.nvml_library = v; });
}

void declare_sim(option_table& t, backend_options& out) {
  CLI::Option* backend = t.app().get_option("--backend");
  t.group(kSim);
  std::vector<CLI::Option*> sim;
  sim.push_back(t.text("sim-model", 0, "NAME",
                       "Simulated GPU model: h100-sxm, h100-pcie, h200, gh200, b200, a100-sxm, "
                       "a100-pcie, a10, l40s, l4, rtx4090, v100, t4; any other name with "
                       "--sim-tdp.",
                       "h100-sxm", [&out](const std::string& v) { out.sim.model = v; }));
  sim.push_back(t.count("sim-gpus", "N", "Number of simulated GPUs, 1 to 1024.", "8", 1, 1024,
                        "a number of GPUs",
                        [&out](std::uint64_t n) { out.sim.gpus = static_cast<unsigned>(n); }));
  sim.push_back(t.text("sim-profile", 0, "PROFILE",
                       "Utilisation over time: train (start-up, then compute and communication "
                       "phases), idle, or a constant utilisation between 0 and 1.",
                       "train", [&out](const std::string& v) {
                         [[maybe_unused]] const sim_profile check(v);  // usage_error when bad
                         out.sim.profile = v;
                       }));
  sim.push_back(t.number("sim-tdp", "W", "Board power of the simulated GPU in watts.", "the model's",
                         1.0, 5000.0, "watts from 1 to 5000",
                         [&out](double w, const std::string&) { out.sim.tdp_w = w; }));
  for (CLI::Option* o : sim) {
    // Rules run before values are stored: --backend is read as it was given.
    t.rule(o, "Only with --backend sim.", [o, backend] {
      if (o->count() == 0) return;
      if (backend->count() == 0 || backend->results().back() != "sim")
        throw usage_error(fmt::format("{} applies only with --backend sim", option_name(o)));
    });
  }
}

void declare_gpus(option_table& t, std::optional<std::string>& out) {
  t.group(kMeasurement);
  t.text("gpus", 0, "LIST",
         "GPUs to measure: all, or a comma-separated list of indices (as nvidia-smi numbers "
         "them), UUIDs (GPU-...), MIG UUIDs (their GPU is measured) or PCI bus ids.",
         "the GPUs this job may use: CUDA_VISIBLE_DEVICES, else NVIDIA_VISIBLE_DEVICES, else all",
         [&out](const std::string& v) {
           if (trim(v).empty()) {
             throw usage_error(
                 "--gpus '': expected all, or a comma-separated list of GPU indices or UUIDs");
           }
           out = v;
         });
}

void declare_components(option_table& t, component_options& out,
                        std::string_view components_default) {
  t.group(kComponents);
  t.text("components", 0, "LIST",
         "What to measure: a comma-separated list of gpu, cpu (RAPL package domains) and dram "
         "(RAPL DRAM domains). Named components that cannot be measured are an error, with the "
         "fix; JOULES_POWERCAP_ROOT points RAPL at another powercap tree.",
         components_default, [&out](const std::string& v) {
           out.named = true;
           out.gpu = out.cpu = out.dram = false;
           for (const auto& part : split(v, ',')) {
             const auto c = trim(part);
             if (c == "gpu") {
               out.gpu = true;
             } else if (c == "cpu") {
               out.cpu = true;
             } else if (c == "dram") {
               out.dram = true;
             } else {
               throw usage_error(fmt::format(
                   "--components '{}': expected a comma-separated list of gpu, cpu and dram", v));
             }
           }
         });
  CLI::Option* components = t.app().get_option("--components");
  CLI::Option* estimate =
      t.flag("estimate-cpu", 0,
             "Where RAPL cannot measure the CPU, estimate it as TDP x (0.1 + 0.9 x utilisation), "
             "labelled estimated, with the TDP of the CPU model from joules' table (or "
             "--cpu-tdp).",
             out.estimate_cpu);
  t.rule(estimate, "", [estimate, components] {
    if (estimate->count() == 0 || components->count() == 0) return;
    for (const auto& part : split(components->results().back(), ',')) {
      if (trim(part) == "cpu") return;
    }
    throw usage_error("--estimate-cpu: --components leaves out cpu");
  });
  CLI::Option* tdp = t.number("cpu-tdp", "W", "TDP of one CPU socket in watts for --estimate-cpu.",
                              "the CPU model's, from data/cpu_tdp.csv", 1.0, 2000.0,
                              "watts from 1 to 2000",
                              [&out](double w, const std::string&) { out.cpu_tdp_w = w; });
  t.needs(tdp, estimate);
}

void declare_carbon(option_table& t, carbon::settings& out) {
  t.group(kCarbon);
  t.number("pue", "X",
           "Power usage effectiveness of the facility: the measured energy times X is what the "
           "grid delivered (cooling, power conversion).",
           "1.0 (the measured devices only)", 1.0, 5.0,
           "a power usage effectiveness from 1.0 to 5.0, e.g. 1.2",
           [&out](double v, const std::string& text) {
             out.pue = v;
             out.pue_text = text;
           });
  t.number("carbon-intensity", "G",
           "Carbon intensity of the electricity in grams of CO2e per kWh; overrides --region's.",
           "from --region", 0.0, 2000.0, "grams of CO2e per kWh from 0 to 2000, e.g. 350",
           [&out](double v, const std::string& text) {
             out.carbon_intensity = v;
             out.carbon_intensity_text = text;
           });
  t.text("region", 0, "REGION",
         "Where the electricity comes from, for its carbon intensity (shipped tables, no "
         "network): an ISO country code (DE, FRA), a US state (US-CA) or a cloud region "
         "(gcp:europe-west4, aws:us-east-1, azure:westeurope). One the tables do not list is an "
         "error, with the closest they do, unless --carbon-intensity gives the figure.",
         "JOULES_REGION, else none: energy only, no CO2e", [&out](const std::string& v) {
           out.region = v;
           out.region_from = "--region";
         });
  CLI::Option* price =
      t.number("price-per-kwh", "P", "Price of one kWh, for the energy cost (PUE included).", "",
               0.0, 1000.0, "a price per kWh from 0 to 1000, e.g. 0.25",
               [&out](double v, const std::string& text) {
                 out.price_per_kwh = v;
                 out.price_per_kwh_text = text;
               });
  CLI::Option* currency =
      t.text("currency", 0, "CODE", "ISO 4217 code of --price-per-kwh's currency.", "USD",
             [&out](const std::string& v) { out.currency = v; });
  t.needs(currency, price);
}

carbon::factors resolve_carbon(carbon::settings s) {
  if (!s.region) {
    if (const char* env = std::getenv("JOULES_REGION"); env != nullptr && *env != '\0') {
      s.region = std::string(env);
      s.region_from = "JOULES_REGION";
    }
  }
  return carbon::resolve(s);
}

void declare_measure(option_table& t, measure_options& out) {
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
  t.excludes(t.flag("json", 0, "Write the JSONL records to stderr (instead of the summary line).",
                    s.json),
             output);
  t.flag("quiet", 'q', "Do not print the summary line.", s.quiet);
  t.repeated("label", "KEY=VALUE",
             "Attach a label to the run's records. KEY is letters, digits and _, not starting "
             "with a digit.",
             [&s](const std::string& v) { s.labels.push_back(run_label(v, s)); });
  t.text("run-id", 0, "ID",
         "Identifier on every record of the run; give every node of a multi-node run the same "
         "one.",
         "JOULES_RUN_ID, else SLURM_JOB_ID.SLURM_STEP_ID, else random", [&out](const std::string& v) {
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
  return s;
}

}  // namespace joules::cli
