#include "wrap/predictor.hpp"

#include <array>

namespace joules {
namespace {
constexpr std::array kMilestones = {10, 50, 90};
}

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
  if (!basis_step_ || !total_steps || *total_steps == 0 || step_ <= *basis_step_)
    return std::nullopt;
  const std::uint64_t measured = step_ - *basis_step_;
  if (measured < predict_after_ || step_ > *total_steps) return std::nullopt;
  const int percent = static_cast<int>(100 * step_ / *total_steps);
  int milestone = 0;
  if (first_done_) {
    while (next_milestone_ < static_cast<int>(kMilestones.size()) &&
           kMilestones[static_cast<std::size_t>(next_milestone_)] <= percent) {
      milestone = kMilestones[static_cast<std::size_t>(next_milestone_)];
      ++next_milestone_;
    }
    if (milestone == 0) return std::nullopt;
  } else {
    first_done_ = true;
    // Milestones already behind us are not announced again.
    while (next_milestone_ < static_cast<int>(kMilestones.size()) &&
           kMilestones[static_cast<std::size_t>(next_milestone_)] <= percent) {
      ++next_milestone_;
    }
  }
  prediction p;
  p.at_step = step_;
  p.total_steps = *total_steps;
  p.basis_steps = measured;
  p.energy_per_step_j = (energy_j_ - basis_energy_j_) / static_cast<double>(measured);
  p.duration_per_step_s = (end_s_ - basis_s_) / static_cast<double>(measured);
  const auto remaining = static_cast<double>(*total_steps - step_);
  p.energy_j = energy_j_ + p.energy_per_step_j * remaining;
  p.remaining_s = p.duration_per_step_s * remaining;
  p.duration_s = end_s_ + p.remaining_s;
  p.milestone_percent = milestone;
  return p;
}

}  // namespace joules
