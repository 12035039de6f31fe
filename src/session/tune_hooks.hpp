#pragma once
// The state of `joules tune` inside wrap's loop (session/tune.hpp): which limit is in force
// from which step, what each limit measured, the search for the next one, the choice, and the
// restore when the command ends.  Records (`tune`, docs/jsonl-schema.md) and notices say every
// decision.
//
//   unavailable  the limits cannot be changed here: the command runs untuned, measured as by wrap
//   profiling    the baseline, then one limit after another, `settle` + `profile` steps each
//   tuned        the chosen limit, for the rest of the run
//   stopped      a change failed (a GPU lost, permission withdrawn): every GPU set back, no more
//                changes
//
// Not thread-safe: wrap's main loop's.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "control/gpu_claim.hpp"
#include "session/limit_control.hpp"
#include "session/tune.hpp"
#include "session/tune_plan.hpp"
#include "tuning/profile.hpp"
#include "tuning/search.hpp"

namespace joules::session {

// A limit in NVML's milliwatts as the watts records and messages show.
inline double watts_of(std::uint32_t mw) {
  return mw / 1000.0;
}

class tune_hooks final : public wrap_hooks {
 public:
  tune_hooks(const wrap_settings& ws, const tune_settings& ts);
  ~tune_hooks() override;

  std::string_view subcommand() const override { return "tune"; }
  void check(sampler& s, const std::vector<std::size_t>& measured) override;
  void before_command(measurement& m) override;
  void command_started() override;
  void on_step(std::uint64_t window, mono_time t) override;
  void on_window(const window_result& w, const window_label& l) override;
  void after_command() override;
  void finish(measurement& m, std::vector<summary_part>& summary) override;

 private:
  enum class state { unavailable, profiling, tuned, stopped };

  // Outcomes of changes that came back: a failure stops tuning.
  void collect();
  void stop(const std::string& why);
  // The next limit at the step that closed `window`, or the choice when the search is done.
  void advance(std::uint64_t window);
  void choose(std::uint64_t window);
  // One line for a limit whose measurement is complete.
  void report_stage(std::size_t stage);
  void record(const std::string& event, const std::function<void(json_writer&)>& fields);
  std::string section_json() const;
  summary_part summary_text() const;
  // The limit GPU k is to have after the choice.
  std::uint32_t chosen_for(std::size_t k) const;

  // Records decided before the command started, written once session_start is.
  std::vector<std::string> early_records_;
  wrap_settings ws_;
  tune_settings ts_;
  state state_ = state::unavailable;
  std::string unavailable_;  // why, in state unavailable
  std::string stopped_;      // why, in state stopped
  limit_plan plan_;
  std::unique_ptr<control::gpu_claim> claim_;
  std::unique_ptr<limit_control> control_;
  std::optional<tuning::limit_search> search_;
  std::optional<tuning::limit_profile> profile_;
  measurement* m_ = nullptr;
  bool switch_wanted_ = false;
  std::size_t reported_stages_ = 0;
  std::optional<std::size_t> tuned_stage_;  // the stage that holds the chosen limit
  std::optional<tuning::point> chosen_;     // the choice (all GPUs; per-GPU: their sum)
  std::vector<std::uint32_t> chosen_per_gpu_;
  std::optional<std::uint64_t> total_steps_;
  std::vector<limit_control::outcome> restored_;
  bool restore_failed_ = false;
  bool started_ = false;  // session_start is written
};

}  // namespace joules::session
