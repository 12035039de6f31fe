#pragma once
// One measurement from start to records: it opens the backend on the sampler's thread, chooses
// the devices this job may use, opens the outputs (JSONL, the live exporters), places the
// boundaries of the measured interval, adds up the windows accounting hands back and writes
// `session_start`, `session_end` and the summary line.  `run` and `wrap` drive one around a
// child process; the same steps serve any caller that brackets work between two instants.
//
// Thread-safety: one thread drives it; sampler() and live() are safe to use from others as
// their headers say.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/composite/open_backend.hpp"
#include "carbon/carbon.hpp"
#include "export/metrics/run_metrics.hpp"
#include "proc/child.hpp"
#include "record/jsonl_sink.hpp"
#include "record/session_records.hpp"
#include "sampler/sampler.hpp"
#include "session/inference.hpp"
#include "session/run_export.hpp"
#include "session/sample_writer.hpp"

namespace joules::session {

struct measure_settings {
  backend_options backend;
  std::optional<std::string> gpus;
  std::chrono::milliseconds interval{100};
  bool interval_given = false;  // --interval was on the command line
  std::optional<std::string> output;
  // The first width of the `sample` records' buckets; none: no sample records.
  std::optional<std::chrono::milliseconds> samples_interval;
  bool samples_default = false;  // on because the records go to a file, not asked for
  bool append = false;
  bool json = false;
  bool quiet = false;
  std::vector<std::pair<std::string, std::string>> labels;
  std::string run_id;
  std::vector<std::string> command;  // the measured command, when there is one
  export_settings exports;           // --prometheus, --otlp
  inference_settings inference;      // --tokens-from, --tokens-metric, --tokens-interval
  // --summary: an aligned block on a terminal and one line otherwise (auto), or either always.
  enum class summary_form { automatic, block, line } summary = summary_form::automatic;
  carbon::factors carbon;  // --pue, --region, --carbon-intensity, --price-per-kwh (resolved)
};

// How the measured interval ended: a command's exit, or the caller's end.
struct interval_end {
  mono_time time{};
  int exit_status = 0;
  std::optional<int> exit_code;
  std::optional<int> exit_signal;
  std::optional<int> forwarded_signal;
};

// The end of a command's run, as measurement::finish() takes it.
interval_end end_of(const child_process& child);

class measurement {
 public:
  // Checks a session makes once the devices are chosen and before the outputs open (tune: the
  // limits against the GPUs' ranges, their locks): it gets the sampler (not started) and the
  // measured devices, and throws usage_error or fatal_error.
  using device_check =
      std::function<void(joules::sampler&, const std::vector<std::size_t>& measured)>;

  // Resolves the command (when there is one), opens the backend, chooses devices, runs `check`
  // and opens the outputs, in that order, so that every input error is reported before a file
  // is truncated or a child started.  Throws usage_error or fatal_error.
  measurement(const measure_settings& settings, std::string subcommand,
              const device_check& check = {});
  ~measurement();
  measurement(const measurement&) = delete;
  measurement& operator=(const measurement&) = delete;

  joules::sampler& sampler() { return *sampler_; }
  const run_context& context() const { return ctx_; }
  jsonl_sink* sink() { return sink_ ? &*sink_ : nullptr; }
  // The run's live state for --prometheus and --otlp (export/metrics/run_metrics.hpp).
  exporter::run_metrics& live() { return *live_; }
  // The token sources (--tokens-from; wrap's log lines), when there are any.
  inference_tracker* inference() { return inference_.get(); }

  // Starts the exporters and the sampling; returns after every device's first reading.
  void start();
  // The measured interval began at `t`: opens its window, writes session_start and starts the
  // token sources.
  void begin(mono_time t);
  // It ended at `t`: the token sources' last counts, then the last boundary and readings;
  // returns the windows not yet handed out through the sampler's on_window callback.
  std::vector<window_result> end(mono_time t);

  // Adds a finished window to the run's totals.  Every window must pass here.
  void add_window(const window_result& w);

  // Writes session_end (with `extra_json` as its "wrap" object, when given) and the summary,
  // with `summary_extra` among its parts.  Returns the exit status to end with.
  int finish(const interval_end& end, const std::string& extra_json = {},
             const std::vector<summary_part>& summary_extra = {});

  // An object written under `key` in session_end (after "wrap"), e.g. "tune".  Before finish().
  void add_section(std::string key, std::string json) {
    sections_.emplace_back(std::move(key), std::move(json));
  }

  // The run's energy so far: the sum of the windows added.
  microjoules run_energy_uj() const { return run_ ? run_->energy_uj : 0; }

  // No sample records in this run (wrap: the records share the command's stream, where only
  // its main loop may write).  `why` is said in a note when they were asked for.
  void drop_samples(std::string_view why);

  // Set when the sampler had to be abandoned in a hung backend call: the process must end
  // without running destructors that would wait for it.
  bool must_exit_hard() const { return must_exit_hard_; }

 private:
  // The summary on stderr, as a block or a line (measure_settings::summary).
  void print_summary(const run_outcome& out, const std::vector<summary_part>& extra) const;
  // The snapshots' energy of each device at t (for the live metrics).
  std::vector<double> energy_at(mono_time t) const;

  measure_settings settings_;
  std::unique_ptr<joules::sampler> sampler_;
  std::vector<std::size_t> measured_;  // indices into the backend's devices
  std::optional<jsonl_sink> sink_;
  run_context ctx_;
  std::optional<window_result> run_;  // the whole run, the sum of its windows
  std::unique_ptr<exporter::run_metrics> live_;
  std::unique_ptr<inference_tracker> inference_;
  std::unique_ptr<exporters> exporters_;    // null without --prometheus and --otlp
  std::unique_ptr<sample_writer> samples_;  // from begin() to end(), with samples on
  bool must_exit_hard_ = false;
  std::vector<std::pair<std::string, std::string>> sections_;
};

}  // namespace joules::session
