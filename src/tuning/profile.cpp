#include "tuning/profile.hpp"

#include <algorithm>

namespace joules::tuning {

void limit_profile::begin(std::uint32_t mw, std::uint64_t first_window,
                          std::uint64_t settle_steps) {
  stage s;
  s.limit_mw = mw;
  s.first_window = first_window;
  s.settle_steps = settle_steps;
  s.gpu_energy_j.assign(gpus_, 0.0);
  stages_.push_back(std::move(s));
}

void limit_profile::add(std::uint64_t window, std::uint64_t steps, double seconds,
                        const std::vector<std::optional<double>>& gpu_energy_j) {
  // The last stage that began at or before this window.
  auto it = std::find_if(stages_.rbegin(), stages_.rend(),
                         [&](const stage& s) { return s.first_window <= window; });
  if (it == stages_.rend() || steps == 0) return;
  stage& s = *it;
  const bool settling = s.steps_seen < s.settle_steps;
  s.steps_seen += steps;
  if (settling) return;
  const bool whole = std::all_of(gpu_energy_j.begin(), gpu_energy_j.end(),
                                 [](const auto& e) { return e.has_value(); });
  if (!whole || gpu_energy_j.size() != gpus_) return;
  s.steps += steps;
  s.seconds += seconds;
  for (std::size_t k = 0; k < gpus_; ++k) {
    s.gpu_energy_j[k] += *gpu_energy_j[k];
    s.energy_j += *gpu_energy_j[k];
  }
}

std::vector<point> limit_profile::sum(std::optional<std::size_t> gpu, std::size_t stages) const {
  std::vector<point> out;
  std::vector<double> energy;
  std::vector<double> seconds;
  for (std::size_t i = 0; i < stages_.size() && i < stages; ++i) {
    const stage& s = stages_[i];
    if (s.steps == 0) continue;
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const point& p) { return p.limit_mw == s.limit_mw; });
    if (it == out.end()) {
      out.push_back({s.limit_mw, 0.0, 0.0, 0});
      energy.push_back(0.0);
      seconds.push_back(0.0);
      it = out.end() - 1;
    }
    const auto k = static_cast<std::size_t>(it - out.begin());
    it->steps += s.steps;
    energy[k] += gpu ? s.gpu_energy_j[*gpu] : s.energy_j;
    seconds[k] += s.seconds;
  }
  for (std::size_t k = 0; k < out.size(); ++k) {
    const auto n = static_cast<double>(out[k].steps);
    out[k].energy_per_step_j = energy[k] / n;
    out[k].seconds_per_step = seconds[k] / n;
  }
  return out;
}

std::vector<point> limit_profile::points(std::size_t stages) const {
  return sum(std::nullopt, stages);
}

std::vector<point> limit_profile::points_of_gpu(std::size_t k, std::size_t stages) const {
  return sum(k, stages);
}

}  // namespace joules::tuning
