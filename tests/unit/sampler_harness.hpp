#pragma once
// A sampler on a scripted backend in virtual time, for the sampler's unit tests: the test moves
// time (run_until), places boundaries at virtual instants, and finishes the run, and every step
// happens at a known instant.  Instants are seconds since the fake clock's start (kOrigin);
// accounting's are CLOCK_MONOTONIC seconds, kOriginS more.

#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <thread>
#include <vector>

#include "fake_clock.hpp"
#include "sampler/sampler.hpp"
#include "scripted_backend.hpp"

namespace joules::testing {

// Instants are exact to the nanosecond of the fake clock.
inline constexpr double kNs = 1e-9;
inline constexpr double kOriginS = 1000.0;
inline const mono_time kOrigin = mono_time(std::chrono::seconds(1000));

inline mono_time at(double s) {
  return kOrigin + std::chrono::nanoseconds(std::llround(s * 1e9));
}
// A window edge (monotonic seconds) as seconds since kOrigin.
inline double since_origin(double monotonic_s) {
  return monotonic_s - kOriginS;
}

class sampler_harness {
 public:
  explicit sampler_harness(std::vector<scripted_device> devices, sampler_options options = {})
      : clock_(kOrigin), script_(std::move(devices)) {
    auto made = std::make_unique<scripted_backend>(clock_, kOrigin, script_);
    // The factory runs on the sampler thread before the constructor returns.
    sampler_ =
        std::make_unique<joules::sampler>([&made] { return std::move(made); }, options, clock_);
  }
  ~sampler_harness() {
    // stop() needs no virtual time to pass (finish() does: finish_at).
    if (!finished_) sampler_->stop(std::chrono::milliseconds(1000));
  }
  sampler_harness(const sampler_harness&) = delete;
  sampler_harness& operator=(const sampler_harness&) = delete;

  // Starts sampling every device, and returns once the sampler waits on the clock.
  void start() {
    std::vector<std::size_t> all(script_.devices().size());
    std::iota(all.begin(), all.end(), std::size_t{0});
    sampler_->start(std::move(all));
    clock_.wait_idle();
  }

  void run_until(double t) { clock_.run_until(at(t)); }
  // A boundary now, and everything it causes (the reads after it), up to `until`.
  void boundary_then_run(double until) {
    sampler_->boundary(clock_.now());
    run_until(until);
  }

  // finish() at `end` (now when unset), with a second thread moving virtual time while finish()
  // waits for the sampler's last reads: it steps whenever both finish() and the sampler wait.
  std::vector<window_result> finish_at(std::optional<double> end = std::nullopt) {
    std::jthread driver([this](std::stop_token stop) {
      while (clock_.wait_idle(2, stop)) {
        if (const auto next = clock_.next_deadline()) clock_.advance_to(*next);
      }
    });
    finished_ = true;
    return sampler_->finish(end ? at(*end) : clock_.now());
  }

  // The devices' script: its truth and its log of reads.
  const script& truth() const { return script_; }
  joules::sampler& sampler() { return *sampler_; }
  // Safe while the sampler waits on the clock (after run_until) and after finish.
  const device_timeline& timeline(std::size_t i) const { return sampler_->accounts().timeline(i); }

 private:
  fake_clock clock_;
  script script_;
  std::unique_ptr<joules::sampler> sampler_;
  bool finished_ = false;
};

// A GPU whose counter advances every `quantum` s from `phase` s (0: continuously), at `watts`.
inline scripted_device stepped_gpu(unsigned index, double quantum, double phase,
                                   double watts = 300.0) {
  scripted_device d;
  d.info = scripted_gpu(index);
  d.quantum_s = quantum;
  d.phase_s = phase;
  d.power = {{0.0, watts}};
  return d;
}

// Runs to t and places a boundary there.
inline void boundary_at(sampler_harness& h, double t) {
  h.run_until(t);
  h.sampler().boundary(at(t));
}

// How exact a window is: each edge is placed to within half a millisecond (the middle of a 1 ms
// bracket of reads), so within the power times that, plus the counter's millijoule.
inline double edge_tolerance_j(double watts) {
  return 2 * (watts * 0.0005 + 0.001);
}

// Energy (J) of device `d` over a window, and the truth over the same interval.
inline double window_j(const window_result& w, std::size_t d) {
  return static_cast<double>(w.devices[d].energy_uj.value_or(0)) / 1e6;
}
inline double truth_j(const script& b, std::size_t d, const window_result& w) {
  return b.energy_j(d, since_origin(w.end_t)) - b.energy_j(d, since_origin(w.start_t));
}

}  // namespace joules::testing
