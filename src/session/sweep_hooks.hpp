#pragma once
// One run of a sweep inside wrap's loop: the limit set before the command starts, the steps
// measured after the warm-up, the command ended once enough are measured, the limit restored
// when it has ended.  The GPUs stay claimed (locked) across the runs (session/sweep.hpp).
//
// Not thread-safe: wrap's main loop's.

#include <memory>
#include <optional>
#include <string>

#include "control/gpu_claim.hpp"
#include "session/limit_control.hpp"
#include "session/sweep.hpp"
#include "session/tune_plan.hpp"

namespace joules::session {

// What a sweep keeps from run to run.
struct sweep_state {
  const sweep_settings* settings = nullptr;
  std::uint64_t warmup_steps = 3;
  limit_plan plan;
  std::unique_ptr<control::gpu_claim> claim;
  std::string device_name;  // of the first GPU, for the picture's title
};

// One limit's run, as measured.
struct sweep_result {
  std::uint32_t limit_mw = 0;
  std::uint64_t steps = 0;  // measured (after the warm-up)
  double energy_j = 0.0;    // of those steps, the swept GPUs
  double seconds = 0.0;
  double run_energy_j = 0.0;  // the whole run, the swept GPUs
  double run_seconds = 0.0;
  int exit_status = 0;
  bool stopped = false;  // the sweep ended the command after its steps
};

class sweep_run final : public wrap_hooks {
 public:
  sweep_run(sweep_state& state, std::uint32_t limit_mw, bool first);

  std::string_view subcommand() const override { return "sweep"; }
  void check(sampler& s, const std::vector<std::size_t>& measured) override;
  void before_command(measurement& m) override;
  void on_window(const window_result& w, const window_label& l) override;
  bool stop_command() override;
  void after_command() override;

  const sweep_result& result() const { return result_; }

 private:
  sweep_state& state_;
  bool first_;
  sweep_result result_;
  std::uint64_t steps_seen_ = 0;  // steps of the accounted step windows
  std::unique_ptr<limit_control> control_;
};

}  // namespace joules::session
