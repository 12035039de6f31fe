#pragma once
// Options several subcommands share, declared once each: where readings come from (--backend,
// --nvml-library, --amdsmi-library, --level-zero-library, --sim-*), which GPUs (--gpus), CPU and
// DRAM (--components, --estimate-cpu,
// --cpu-tdp), carbon and cost (--pue, --region, --carbon-intensity, --price-per-kwh,
// --currency), and the measurement options of run and wrap (outputs, labels, run id, live
// metrics).  docs/carbon.md, docs/metrics.md, docs/jsonl-schema.md.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "backends/composite/open_backend.hpp"
#include "carbon/carbon.hpp"
#include "options/option_table.hpp"
#include "session/measurement.hpp"
#include "session/wrap.hpp"

namespace joules::cli {

// --backend, --nvml-library, --amdsmi-library and --level-zero-library.
void declare_backend(options::option_table& t, backend_options& out);
// The --sim-* options, only with --backend sim (declared after declare_backend).
void declare_sim(options::option_table& t, backend_options& out);
// --gpus.
void declare_gpus(options::option_table& t, std::optional<std::string>& out);
// --components, --estimate-cpu, --cpu-tdp.  `components_default` is --components' default as
// this subcommand's help says it.
void declare_components(options::option_table& t, component_options& out,
                        std::string_view components_default);
// --pue, --carbon-intensity, --region (else JOULES_REGION, read in resolve_carbon),
// --price-per-kwh, --currency.
void declare_carbon(options::option_table& t, carbon::settings& out);
// The settings above with JOULES_REGION applied, resolved against the shipped tables.  Throws
// usage_error.
carbon::factors resolve_carbon(carbon::settings s);

// --prometheus, --otlp and the OTLP options (header, interval, TLS files).
void declare_exports(options::option_table& t, session::export_settings& e);

// --output FILE with --output-max-size and --output-keep: a JSONL file rotated past a size
// (record/jsonl_sink.hpp), as monitor and serve write theirs.  `output_help` says what goes to
// FILE.  Returns --output's option.
CLI::Option* declare_rotated_output(options::option_table& t, std::string_view output_help,
                                    std::optional<std::string>& path, std::uint64_t& max_bytes,
                                    unsigned& keep);

// --tokens-from, --tokens-metric, --tokens-interval (docs/inference.md).
void declare_tokens(options::option_table& t, session::inference_settings& s,
                    std::string_view subcommand);

// Everything `run` has (and `wrap` too): the options above, --interval, the outputs, labels,
// run id and live metrics.  `run_id` and `carbon` are raw until finish_measure().
struct measure_options {
  session::measure_settings settings;
  std::chrono::milliseconds samples_interval{1000};
  bool samples_given = false;
  bool no_samples = false;
  std::optional<std::string> run_id;
  carbon::settings carbon;
  std::string summary = "auto";  // --summary
};
void declare_measure(options::option_table& t, measure_options& out, std::string_view subcommand);
// After parsing: the command, the run id and the carbon factors.  Throws usage_error.
session::measure_settings finish_measure(measure_options& o, std::vector<std::string> command,
                                         std::string_view subcommand);

// The options of wrap (tune and sweep have them too): --step-regex, --tokens-per-step,
// --samples-per-step, --total-steps, --predict-after, --warmup-steps, the straggler options,
// --inline, --no-inline, --no-pty.
struct wrap_options {
  wrap_settings steps;
  session::wrap_output output;
  bool inline_energy = false;
  bool no_inline = false;
  bool no_pty = false;
};
void declare_wrap(options::option_table& t, wrap_options& out);
// After parsing: the output settings.
session::wrap_output finish_wrap(const wrap_options& o);

}  // namespace joules::cli
