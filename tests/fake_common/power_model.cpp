#include "power_model.hpp"

#include <algorithm>
#include <utility>

namespace fake_gpu {

power_model::power_model(power_function base, bool clamp_to_limit, unsigned int initial_limit_mw)
    : base_(std::move(base)), clamp_(clamp_to_limit), limit_mw_(initial_limit_mw) {
  if (!clamp_) return;
  epochs_ = std::make_unique<std::unique_ptr<const epoch>[]>(kMaxEpochs);
  const double limit_w = static_cast<double>(initial_limit_mw) / 1000.0;
  epochs_[0] = std::make_unique<const epoch>(epoch{0.0, 0.0, limit_w, base_.clamped(limit_w)});
  epoch_count_.store(1, std::memory_order_release);
}

const power_model::epoch& power_model::epoch_at(double t) const {
  const std::size_t n = epoch_count_.load(std::memory_order_acquire);
  // The last epoch that starts at or before t; the first one also covers everything before it.
  const auto* first = epochs_.get();
  const auto* it = std::upper_bound(first + 1, first + n, t,
                                    [](double v, const auto& e) { return v < e->start_s; });
  return **(it - 1);
}

double power_model::watts_at(double t) const {
  if (!clamp_) return base_.watts_at(t);
  return epoch_at(t).clamped.watts_at(t);
}

double power_model::energy_j(double t) const {
  if (!clamp_) return base_.energy_j(t);
  const epoch& e = epoch_at(t);
  return e.base_j + (e.clamped.energy_j(t) - e.clamped.energy_j(e.start_s));
}

bool power_model::capped_at(double t) const {
  return clamp_ && base_.watts_at(t) > epoch_at(t).limit_w;
}

bool power_model::set_limit(double t, unsigned int limit_mw) {
  std::lock_guard lock(set_mutex_);
  if (!clamp_) {
    limit_mw_.store(limit_mw, std::memory_order_release);
    return true;
  }
  if (limit_mw == limit_mw_.load(std::memory_order_relaxed)) return true;
  const std::size_t n = epoch_count_.load(std::memory_order_relaxed);
  if (n == kMaxEpochs) return false;
  const double start = std::max(t, epochs_[n - 1]->start_s);
  const double limit_w = static_cast<double>(limit_mw) / 1000.0;
  epochs_[n] =
      std::make_unique<const epoch>(epoch{start, energy_j(start), limit_w, base_.clamped(limit_w)});
  epoch_count_.store(n + 1, std::memory_order_release);
  limit_mw_.store(limit_mw, std::memory_order_release);
  return true;
}

}  // namespace fake_gpu
