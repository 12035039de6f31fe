#include "export/metrics/run_metrics.hpp"

#include <algorithm>

#include "windows/stragglers.hpp"

namespace joules::exporter {

run_metrics::run_metrics(std::vector<bool> is_gpu) : is_gpu_(std::move(is_gpu)) {
  const std::size_t devices = is_gpu_.size();
  state_.gpu_windows_energy_j.assign(devices, 0.0);
  state_.gpu_last_step_energy_j.assign(devices, std::nullopt);
  state_.gpu_step_deviation.assign(devices, std::nullopt);
}

void run_metrics::set_started(mono_time t, std::vector<double> energy_j) {
  std::lock_guard lock(mu_);
  state_.started = t;
  state_.start_energy_j = std::move(energy_j);
  changed();
}

void run_metrics::add_window(const window_result& w) {
  std::lock_guard lock(mu_);
  ++state_.windows;
  state_.windows_energy_j += static_cast<double>(w.energy_uj) * 1e-6;
  const std::size_t n = std::min(w.devices.size(), state_.gpu_windows_energy_j.size());
  for (std::size_t d = 0; d < n; ++d) {
    if (w.devices[d].energy_uj)
      state_.gpu_windows_energy_j[d] += static_cast<double>(*w.devices[d].energy_uj) * 1e-6;
  }
  changed();
}

void run_metrics::command_ended() {
  std::lock_guard lock(mu_);
  state_.ending = true;
  changed();
}

void run_metrics::finish(double duration_s) {
  std::lock_guard lock(mu_);
  state_.finished = true;
  state_.finished_duration_s = duration_s;
  changed();
}

void run_metrics::add_step(std::uint64_t step, std::uint64_t steps,
                           std::optional<std::uint64_t> total, const window_result& w) {
  steps = std::max<std::uint64_t>(steps, 1);
  const double k = static_cast<double>(steps);
  std::vector<std::optional<double>> per_step(w.devices.size());
  for (std::size_t d = 0; d < w.devices.size() && d < is_gpu_.size(); ++d) {
    if (is_gpu_[d] && w.devices[d].energy_uj)
      per_step[d] = static_cast<double>(*w.devices[d].energy_uj) * 1e-6 / k;
  }
  auto deviation = straggler_detector::deviations(per_step);

  std::lock_guard lock(mu_);
  state_.steps += steps;
  state_.last_step = step;
  if (total) state_.total_steps = total;
  const double energy_j = static_cast<double>(w.energy_uj) * 1e-6;
  state_.steps_energy_j += energy_j;
  state_.steps_duration_s += w.duration_s();
  state_.last_step_energy_j = energy_j / k;
  state_.last_step_duration_s = w.duration_s() / k;
  per_step.resize(state_.gpu_last_step_energy_j.size());
  deviation.resize(state_.gpu_step_deviation.size());
  state_.gpu_last_step_energy_j = std::move(per_step);
  state_.gpu_step_deviation = std::move(deviation);
  changed();
}

void run_metrics::set_training_metrics(std::span<const steps::metric> metrics) {
  std::lock_guard lock(mu_);
  for (const auto& m : metrics) {
    auto it = std::find_if(state_.training.begin(), state_.training.end(),
                           [&](const auto& kv) { return kv.first == m.name; });
    if (it != state_.training.end()) {
      it->second = m.value;
    } else if (state_.training.size() < kMaxTrainingMetrics) {
      state_.training.emplace_back(m.name, m.value);
    }
  }
  changed();
}

void run_metrics::set_prediction(const joules::prediction& p) {
  std::lock_guard lock(mu_);
  state_.prediction = p;
  changed();
}

void run_metrics::changed() {
  version_.fetch_add(1, std::memory_order_release);
}

run_state run_metrics::read() const {
  std::lock_guard lock(mu_);
  return state_;
}

}  // namespace joules::exporter
