#pragma once
// What `run` and `wrap` share: their options, and a measurement session that opens the backend,
// chooses the devices, starts the sampler and writes the run's records.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.hpp"
#include "backends/composite/open_backend.hpp"
#include "carbon/carbon.hpp"
#include "cli/options.hpp"
#include "export/metrics/run_metrics.hpp"
#include "proc/child.hpp"
#include "record/jsonl_sink.hpp"
#include "record/session_records.hpp"
#include "sampler/sampler.hpp"
#include "session/run_export.hpp"

namespace joules::cli {

// The options of `joules run`, which `wrap` has too.
const std::vector<option_spec>& measure_options();

struct measure_settings {
  backend_options backend;
  std::optional<std::string> gpus;
  std::chrono::milliseconds interval{100};
  bool interval_given = false;  // --interval was on the command line
  std::optional<std::string> output;
  bool append = false;
  bool json = false;
  bool quiet = false;
  std::vector<std::pair<std::string, std::string>> labels;
  std::string run_id;
  std::vector<std::string> command;
  export_settings exports;  // --prometheus, --otlp
  carbon::factors carbon;   // --pue, --region, --carbon-intensity, --price-per-kwh (resolved)
};

// --backend, --nvml-library and --sim-*, which every subcommand that reads hardware shares
// (run, wrap, monitor, doctor): their specs (as in measure_options()) and their reader.  Throws
// usage_error naming the value and what is accepted.
std::vector<option_spec> backend_option_specs();
backend_options read_backend_options(const parsed_args& args);

// Validates the shared options.  Throws usage_error naming the value and what is accepted.
measure_settings read_measure_settings(const parsed_args& args, std::string_view subcommand);

// The run id: --run-id, else JOULES_RUN_ID, else the Slurm job (and step) id, else random.
std::string resolve_run_id(const std::optional<std::string>& option);

class measurement {
 public:
  // Resolves the command, opens the backend, chooses devices and opens the outputs, in that
  // order, so that every input error is reported before a file is truncated or a child started.
  measurement(const measure_settings& settings, std::string subcommand);
  ~measurement();
  measurement(const measurement&) = delete;
  measurement& operator=(const measurement&) = delete;

  joules::sampler& sampler() { return *sampler_; }
  const run_context& context() const { return ctx_; }
  jsonl_sink* sink() { return sink_ ? &*sink_ : nullptr; }
  // The run's live state for --prometheus and --otlp (run_metrics.hpp says what wrap calls).
  exporter::run_metrics& live() { return *live_; }

  // Starts sampling; call right before starting the child.
  void start();
  // The child started at `t`: opens the run's window and writes session_start.
  void child_started(mono_time t);
  // The child ended: places the last boundary, takes the last readings and returns the windows
  // not yet handed out (through the sampler's on_window callback, for wrap).
  std::vector<window_result> child_ended(const child_process& child);

  // Adds a finished window to the run's totals (main thread).  Every window must pass here.
  void add_window(const window_result& w);

  // Writes session_end (with `extra` as its "wrap" object, when given) and the summary line,
  // with `summary_extra` appended to the line.  Returns joules' exit status (the child's).
  int finish(const child_process& child, const std::string& extra_json = {},
             const std::string& summary_extra = {});

  // The run's energy so far: the sum of the windows added.
  microjoules run_energy_uj() const { return run_ ? run_->energy_uj : 0; }

  // Set when the sampler had to be abandoned in a hung backend call: the process must end
  // without running destructors that would wait for it.
  bool must_exit_hard() const { return must_exit_hard_; }

 private:
  measure_settings settings_;
  std::unique_ptr<joules::sampler> sampler_;
  std::vector<std::size_t> measured_;  // indices into the backend's devices
  std::optional<jsonl_sink> sink_;
  run_context ctx_;
  std::optional<window_result> run_;  // the whole run, the sum of its windows
  // The snapshots' energy of each device at t (for the live metrics).
  std::vector<double> energy_at(mono_time t) const;

  std::unique_ptr<exporter::run_metrics> live_;
  std::unique_ptr<exporters> exporters_;  // null without --prometheus and --otlp
  bool must_exit_hard_ = false;
};

}  // namespace joules::cli
