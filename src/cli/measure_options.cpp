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

void declare_measure(options::option_table& t, measure_options& out, std::string_view subcommand) {
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
  // Declared one statement each: --help lists options in the order they are declared, and the
  // order in which a call's arguments are evaluated is the compiler's choice.
  CLI::Option* summary =
      t.choice("summary", "FORM",
               "How the summary on stderr looks: an aligned block (energy, power, steps, J/token, "
               "CO2e, cost, method, what was not measured), or one line for logs; auto is a block "
               "on a terminal and a line otherwise.",
               "auto", {"auto", "block", "line"}, out.summary);
  t.excludes(t.flag("quiet", 'q', "Do not print the summary.", s.quiet), summary);
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
  declare_exports(t, s.exports);
  declare_tokens(t, s.inference, subcommand);
  declare_sim(t, s.backend);
  declare_components(t, s.backend.components,
                     "gpu, plus cpu and dram where RAPL can be read; what cannot is said in the "
                     "summary");
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
  session::check_otlp_tls(s.exports);
  using form = session::measure_settings::summary_form;
  s.summary = o.summary == "block"  ? form::block
              : o.summary == "line" ? form::line
                                    : form::automatic;
  return s;
}

}  // namespace joules::cli
