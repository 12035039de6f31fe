#pragma once
// Step windows into points: which power limit each step ran at, which steps do not count (those
// right after a change, while the GPU's power and the job's pace settle), and the sums of the
// ones that do.
//
// A stage is one limit in force from a step line on: stage s holds the windows from its first
// window (the one after the step line at which the change was asked) to the next stage's.  Its
// first `settle` steps are left out; the rest are measured.  Windows come back from accounting
// later than their step lines, in order; each is added to the stage it ran in.
//
// Pure logic; not thread-safe.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "tuning/goal.hpp"

namespace joules::tuning {

struct stage {
  std::uint32_t limit_mw = 0;
  std::uint64_t first_window = 0;
  std::uint64_t settle_steps = 0;  // steps left out at its start
  std::uint64_t steps_seen = 0;    // steps of its windows so far, settling included
  std::uint64_t steps = 0;         // measured steps
  double energy_j = 0.0;           // of the measured steps, all tuned GPUs
  double seconds = 0.0;
  std::vector<double> gpu_energy_j;  // per tuned GPU
};

class limit_profile {
 public:
  explicit limit_profile(std::size_t gpus) : gpus_(gpus) {}

  // From window `first_window` on, `mw` is in force; the first `settle_steps` steps of it are
  // left out.  Stages begin in window order.
  void begin(std::uint32_t mw, std::uint64_t first_window, std::uint64_t settle_steps);

  // An accounted step window: `steps` steps in `seconds`, `gpu_energy_j` per tuned GPU
  // (nullopt where a GPU yielded no energy: the window is then left out).
  void add(std::uint64_t window, std::uint64_t steps, double seconds,
           const std::vector<std::optional<double>>& gpu_energy_j);

  const std::vector<stage>& stages() const { return stages_; }
  // The stage in force now (the last begun); nullptr before any.
  const stage* current() const { return stages_.empty() ? nullptr : &stages_.back(); }

  // Every limit measured in the first `stages` stages (all by default), its stages added up: a
  // limit tried twice is one point over all its steps.
  std::vector<point> points(std::size_t stages = kAll) const;
  // Per GPU k: the same with GPU k's energy alone.
  std::vector<point> points_of_gpu(std::size_t k, std::size_t stages = kAll) const;

  static constexpr std::size_t kAll = static_cast<std::size_t>(-1);

 private:
  std::vector<point> sum(std::optional<std::size_t> gpu, std::size_t stages) const;

  std::size_t gpus_;
  std::vector<stage> stages_;
};

}  // namespace joules::tuning
