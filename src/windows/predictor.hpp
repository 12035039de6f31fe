#pragma once
// Predicts the energy, duration and finish time of a whole training run from its first steps.
// The rate is measured from the end of warm-up on over every window — steps and
// the evaluations and checkpoints between them — so periodic overheads are in the prediction.
// Pure logic.  Not thread-safe.

#include <cstdint>
#include <optional>

namespace joules {

// What a prediction is of: the steps up to `total_steps` (as the step lines count them).
struct prediction_target {
  std::uint64_t total_steps = 0;
  // Where the target's span begins, for its milestones: 0 for the whole run, the epoch's first
  // batch for one epoch.
  std::uint64_t first_step = 0;
  // The whole run, or only the epoch under way (a per-epoch counter, the number of epochs not
  // in the log).
  bool whole_run = true;
};

struct prediction {
  std::uint64_t at_step = 0;
  std::uint64_t total_steps = 0;
  bool whole_run = true;    // false: the prediction reaches the end of the epoch under way only
  double energy_j = 0.0;    // from the start to total_steps
  double duration_s = 0.0;  // likewise
  double remaining_s = 0.0;
  double energy_per_step_j = 0.0;  // measured rate, overheads included
  double duration_per_step_s = 0.0;
  std::uint64_t basis_steps = 0;  // steps the rate comes from
  int milestone_percent = 0;      // 0 for the first prediction, else 10, 50 or 90
};

class predictor {
 public:
  predictor(std::uint64_t predict_after, std::uint64_t warmup_steps)
      : predict_after_(predict_after), warmup_steps_(warmup_steps) {}

  // Every window of the run in order: the energy of the run so far, the instant the window
  // ended (seconds after the run started), and, for step windows, the step reached.
  void add_window(double run_energy_j, double end_s, std::optional<std::uint64_t> step);

  // A prediction, when one is due now: the first once `predict_after` steps past warm-up are
  // measured, then one as the run passes 10 %, 50 % and 90 % of `total_steps`.
  std::optional<prediction> due(std::optional<std::uint64_t> total_steps);
  // Likewise for a target that may change as the run goes (one epoch after the other): an epoch
  // is announced as it passes 50 %; milestones count within the target's span.
  std::optional<prediction> due(const std::optional<prediction_target>& target);

 private:
  std::uint64_t predict_after_;
  std::uint64_t warmup_steps_;
  std::uint64_t step_windows_ = 0;
  std::optional<std::uint64_t> basis_step_;
  double basis_energy_j_ = 0.0;
  double basis_s_ = 0.0;
  std::uint64_t step_ = 0;
  double energy_j_ = 0.0;
  double end_s_ = 0.0;
  bool first_done_ = false;
  std::optional<std::uint64_t> target_total_;  // the target of the milestones below
  int next_milestone_ = 0;                     // index into the target's milestones
};

}  // namespace joules
