#pragma once
// A backend for the sampler's unit tests whose devices follow a script in virtual time (the fake
// clock): power as a step function of time, an energy counter that advances every Q seconds or
// continuously and whose value is the exact energy at its last update, wrap-around, a counter
// reset, a device lost at an instant, failed reads, NOT_SUPPORTED mid-run, reads that take time.
// The same script gives the truth that the sampler's windows are checked against.
//
// Times are seconds of virtual time since `origin` (the fake clock's start).
// Thread-safety: read() on the sampler thread; the script's log and truth from the test thread
// while the sampler is blocked on the clock (which orders the two) or after it has stopped.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "backends/backend.hpp"
#include "fake_clock.hpp"

namespace joules::testing {

struct scripted_device {
  device_info info;
  // Power from each instant on, (t, W), in time order, from t = 0; truth is its integral.
  std::vector<std::pair<double, double>> power{{0.0, 300.0}};
  // The counter takes a new value every `quantum_s` at phase + k * quantum_s (the value is the
  // energy at that instant); 0: a new value at every instant.
  double quantum_s = 0.0;
  double phase_s = 0.0;
  std::uint64_t counter_start = 5'000'000;  // raw value at t = 0 (mJ, or µJ with energy_uj)
  bool energy_uj = false;  // a µJ counter (RAPL) rather than mJ; wraps at info.wrap's modulus
  std::optional<double> reset_at;  // the counter restarts from 0 then (a driver reload)
  std::optional<double> lost_at;
  std::optional<double> counter_unsupported_at;   // the counter answers NOT_SUPPORTED from then
  std::vector<std::pair<double, double>> errors;  // [from, to): reads fail
  // How long a read started at t takes; the device answers in the middle of it.
  std::function<double(double)> read_s;
  // How long a read of power alone takes (read_what::power); read_s when empty.
  std::function<double(double)> power_read_s;
};

// A GPU with a counter in mJ and instant power, as NVML on Volta and newer.
device_info scripted_gpu(unsigned index);

// The devices' script, the truth it implies, and the log of reads made of it.  Owned by the
// test: the backend (owned by the sampler, dropped when it stops) refers to it.
class script {
 public:
  explicit script(std::vector<scripted_device> devices) : devices_(std::move(devices)) {}

  const std::vector<scripted_device>& devices() const { return devices_; }
  // What device i answers at t.
  device_reading answer(std::size_t i, double t) const;

  // A read of device i that began at `start` (of its counter too unless `power_only`); when
  // device i was read, from `from` on, and when its counter was.
  void record(std::size_t i, double start, bool power_only = false) {
    reads_.emplace_back(i, start);
    if (!power_only) counter_reads_.emplace_back(i, start);
  }
  std::vector<double> read_times(std::size_t i, double from = -1.0) const;
  std::vector<double> counter_read_times(std::size_t i, double from = -1.0) const;

  // The truth: energy (J) that device i used from 0 to t.
  double energy_j(std::size_t i, double t) const;

 private:
  double power_w(std::size_t i, double t) const;
  // The last counter update at or before t.
  double update_at_or_before(std::size_t i, double t) const;

  std::vector<scripted_device> devices_;
  std::vector<std::pair<std::size_t, double>> reads_;  // (device, start), in order
  std::vector<std::pair<std::size_t, double>> counter_reads_;
};

class scripted_backend final : public backend {
 public:
  scripted_backend(fake_clock& clock, mono_time origin, script& s);

  const backend_meta& meta() const override { return meta_; }
  const std::vector<device_info>& devices() const override { return infos_; }
  device_reading read(std::size_t i, read_what what) override;

 private:
  fake_clock& clock_;
  mono_time origin_;
  script& script_;
  std::vector<device_info> infos_;
  backend_meta meta_;
};

}  // namespace joules::testing
