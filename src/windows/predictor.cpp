#include "windows/predictor.hpp"

#include <array>
#include <span>

namespace joules {
namespace {
constexpr std::array kRunMilestones = {10, 50, 90};
// An epoch at a time: one line per epoch, not three.
constexpr std::array kEpochMilestones = {50};
}  // namespace

void predictor::add_window(double run_energy_j, double end_s, std::optional<std::uint64_t> step) {
  energy_j_ = run_energy_j;
  end_s_ = end_s;
  if (!step) return;
  step_ = *step;
  ++step_windows_;
  if (!basis_step_ && step_windows_ >= warmup_steps_) {
    basis_step_ = *step;
    basis_energy_j_ = run_energy_j;
    basis_s_ = end_s;
  }
}

std::optional<prediction> predictor::due(std::optional<std::uint64_t> total_steps) {
  if (!total_steps) return std::nullopt;
  return due(std::optional(prediction_target{*total_steps, 0, true}));
}

std::optional<prediction> predictor::due(const std::optional<prediction_target>& target) {
  if (!basis_step_ || !target || target->total_steps == 0 || step_ <= *basis_step_)
    return std::nullopt;
  const std::uint64_t total = target->total_steps;
  const std::uint64_t measured = step_ - *basis_step_;
  if (measured < predict_after_ || step_ > total || target->first_step >= total) {
    return std::nullopt;
  }
  const std::span<const int> milestones = target->whole_run
                                              ? std::span<const int>(kRunMilestones)
                                              : std::span<const int>(kEpochMilestones);
  const std::uint64_t from = step_ > target->first_step ? step_ - target->first_step : 0;
  const int percent = static_cast<int>(100 * from / (total - target->first_step));
  const bool new_target = target_total_ != total;
  if (new_target) {
    target_total_ = total;
    next_milestone_ = 0;
  }
  int milestone = 0;
  if (first_done_ && !new_target) {
    while (next_milestone_ < static_cast<int>(milestones.size()) &&
           milestones[static_cast<std::size_t>(next_milestone_)] <= percent) {
      milestone = milestones[static_cast<std::size_t>(next_milestone_)];
      ++next_milestone_;
    }
    if (milestone == 0) return std::nullopt;
  } else {
    // Milestones already behind us are not announced again.
    while (next_milestone_ < static_cast<int>(milestones.size()) &&
           milestones[static_cast<std::size_t>(next_milestone_)] <= percent) {
      ++next_milestone_;
    }
    // A later epoch: its first announcement is its milestone, not at once.
    if (first_done_) return std::nullopt;
    first_done_ = true;
  }
  prediction p;
  p.at_step = step_;
  p.total_steps = total;
  p.whole_run = target->whole_run;
  p.basis_steps = measured;
  p.energy_per_step_j = (energy_j_ - basis_energy_j_) / static_cast<double>(measured);
  p.duration_per_step_s = (end_s_ - basis_s_) / static_cast<double>(measured);
  const auto remaining = static_cast<double>(total - step_);
  p.energy_j = energy_j_ + p.energy_per_step_j * remaining;
  p.remaining_s = p.duration_per_step_s * remaining;
  p.duration_s = end_s_ + p.remaining_s;
  p.milestone_percent = milestone;
  return p;
}

}  // namespace joules
