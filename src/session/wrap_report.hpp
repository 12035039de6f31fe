#pragma once
// What `wrap` makes of each finished window: its JSONL record (`step` or `phase`), the inline
// annotation of a step line, the run's energy by kind of window, per-token figures, predictions
// of the whole run and straggler warnings.  Records: docs/jsonl-schema.md.
//
// Not thread-safe: owned by wrap's main loop.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "energy/accounting.hpp"
#include "record/jsonl_sink.hpp"
#include "record/session_records.hpp"
#include "record/summary.hpp"
#include "windows/predictor.hpp"
#include "windows/step_windows.hpp"
#include "windows/stragglers.hpp"

namespace joules {

struct wrap_settings {
  std::optional<std::uint64_t> tokens_per_step;
  std::optional<std::uint64_t> samples_per_step;
  std::optional<std::uint64_t> total_steps;
  std::uint64_t predict_after = 10;
  std::uint64_t warmup_steps = 3;
  double straggler_threshold = 0.10;
  std::size_t straggler_window = 20;
};

class wrap_report {
 public:
  // `notice` prints one line for people (predictions, warnings) on stderr.
  wrap_report(const run_context& ctx, const wrap_settings& settings, jsonl_sink* sink,
              std::function<void(const std::string&)> notice);

  // One finished window and its label, in window order.  Returns the annotation for the step
  // line that closed it (empty for windows that are not steps).
  std::string add(const window_result& w, const window_label& label);

  // The "wrap" object of session_end.
  std::string session_json(microjoules run_total_uj) const;
  // The steps' part of the run's summary (record/summary.hpp).
  std::vector<summary_part> summary() const;

  // The latest prediction of the whole run, once there is one.
  const std::optional<prediction>& last_prediction() const { return last_prediction_; }

  std::uint64_t step_windows() const { return step_windows_; }
  std::uint64_t steps_counted() const { return steps_counted_; }

 private:
  std::optional<double> tokens_of(const window_result& w, const window_label& l) const;
  std::optional<double> samples_of(const window_result& w, const window_label& l) const;
  void predict(const window_label& l);
  std::optional<prediction_target> target_of(const window_label& l) const;

  const run_context& ctx_;
  wrap_settings settings_;
  jsonl_sink* sink_;
  std::function<void(const std::string&)> notice_;
  predictor predictor_;
  straggler_detector stragglers_;
  std::vector<straggler_event> straggler_events_;
  std::optional<prediction> last_prediction_;

  // Energy by kind of window, exact: the parts add up to the run's total.
  microjoules setup_uj_ = 0;
  microjoules steps_uj_ = 0;
  microjoules other_uj_ = 0;
  microjoules tail_uj_ = 0;
  std::map<std::string, microjoules> phases_uj_;
  microjoules all_uj_ = 0;
  std::uint64_t step_windows_ = 0;
  std::uint64_t steps_counted_ = 0;  // sum of step gaps
  std::uint64_t last_step_ = 0;
  std::optional<std::uint64_t> last_total_;
  double tokens_ = 0.0;
  microjoules tokens_uj_ = 0;  // energy of the windows whose tokens are known
  double samples_ = 0.0;
  microjoules samples_uj_ = 0;  // likewise for samples
  std::uint64_t windows_ = 0;
};

}  // namespace joules
