#pragma once
// P(t) and E(t) of one device, including `clamp_to_limit`: the draw is capped at the power limit
// in force at t, and a limit set through a fake's call (nvmlDeviceSetPowerManagementLimit) takes
// effect at the moment of the call.  E(t) stays exact: each limit starts an epoch with its own
// clamped function, and E(t) = E(start of epoch) + the clamped function's integral since then.
//
// Thread-safety: readers take no lock.  Epochs live in a fixed array and are published by a
// release store of the count; set_limit serialises writers with a mutex.  Nothing is allocated
// on a read.

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>

#include "power_function.hpp"

namespace fake_gpu {

class power_model {
 public:
  // At most this many limit changes per device and process take effect; later ones are refused
  // (set_limit returns false), which no test or benchmark comes near.
  static constexpr std::size_t kMaxEpochs = 4096;

  power_model(power_function base, bool clamp_to_limit, unsigned int initial_limit_mw);

  double watts_at(double t) const;
  double energy_j(double t) const;
  // Whether the unclamped draw exceeds the limit at t (the SW power cap clock event).
  bool capped_at(double t) const;

  unsigned int limit_mw() const { return limit_mw_.load(std::memory_order_acquire); }
  // Makes limit_mw the limit from scenario time t on (t is raised to the start of the current
  // epoch if it lies before it).  False when kMaxEpochs is exhausted.
  bool set_limit(double t, unsigned int limit_mw);

 private:
  struct epoch {
    double start_s = 0.0;    // from here on
    double base_j = 0.0;     // E(start_s)
    double limit_w = 0.0;    // the cap of this epoch
    power_function clamped;  // min(P, limit_w)
  };

  const epoch& epoch_at(double t) const;

  power_function base_;
  bool clamp_;
  std::atomic<unsigned int> limit_mw_;
  std::unique_ptr<std::unique_ptr<const epoch>[]> epochs_;  // kMaxEpochs slots
  std::atomic<std::size_t> epoch_count_{0};
  std::mutex set_mutex_;
};

}  // namespace fake_gpu
