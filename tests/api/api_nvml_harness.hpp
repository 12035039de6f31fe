#pragma once
// What the tests of libjoules on the fake NVML share (api_nvml_test.cpp,
// api_nvml_usage_test.cpp): the fake machine, its GPUs and the window results.

#include <gtest/gtest.h>
#include <joules/joules.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "power_function.hpp"

namespace api_test {

using fake_gpu::power_function;

inline std::int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

inline void sleep_s(double s) {
  std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

// One fake GPU: its scenario JSON and the same power function, for the truth.
struct gpu {
  std::string json;
  power_function power;
};

inline std::string counter_json(int update_ms, int phase_ms) {
  return "\"energy_counter\": {\"update_ms\": " + std::to_string(update_ms) +
         ", \"phase_ms\": " + std::to_string(phase_ms) + "}";
}

inline gpu h100_constant(double watts, const std::string& extra = "") {
  gpu g{"{\"latency_us\": 20, \"power\": {\"type\": \"constant\", \"watts\": " +
            std::to_string(watts) + "}" + (extra.empty() ? "" : ", " + extra) + "}",
        power_function::constant(watts)};
  return g;
}

inline gpu h100_square(double low, double high, double period, double phase,
                       const std::string& extra) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "{\"type\": \"square\", \"low_w\": %.17g, \"high_w\": %.17g, \"period_s\": %.17g, "
                "\"phase_s\": %.17g}",
                low, high, period, phase);
  return gpu{"{\"latency_us\": 20, \"power\": " + std::string(buf) +
                 (extra.empty() ? "" : ", " + extra) + "}",
             power_function::square(low, high, period, 0.5, phase)};
}

// Power that changes every 20 ms to a pseudo-random value in [100, 700) W, for 40 s.
inline gpu h100_segments(unsigned seed, const std::string& extra) {
  std::vector<double> watts;
  std::string list;
  std::uint64_t x = 0x9E3779B97F4A7C15ULL * (seed + 1);
  for (int i = 0; i < 2000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const double w = 100.0 + static_cast<double>(x % 600000) / 1000.0;
    watts.push_back(w);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s%.3f", i == 0 ? "" : ",", w);
    list += buf;
  }
  return gpu{
      "{\"latency_us\": 20, \"power\": {\"type\": \"segments\", \"start_s\": 0, \"dt_s\": "
      "0.02, \"watts\": [" +
          list + "]}" + (extra.empty() ? "" : ", " + extra) + "}",
      power_function::uniform(0.0, 0.02, watts)};
}

class fake_machine {
 public:
  explicit fake_machine(std::vector<gpu> gpus) : gpus_(std::move(gpus)) {
    std::string devices;
    for (std::size_t i = 0; i < gpus_.size(); ++i)
      devices += (i ? ", " : "") + gpus_[i].json;
    scenario_ = "{\"devices\": [" + devices + "]}";
    epoch_ns_ = monotonic_ns() - 10'000'000'000LL;
    setenv("FAKE_NVML_SCENARIO", scenario_.c_str(), 1);
    setenv("FAKE_NVML_EPOCH_NS", std::to_string(epoch_ns_).c_str(), 1);
    unsetenv("CUDA_VISIBLE_DEVICES");
    unsetenv("NVIDIA_VISIBLE_DEVICES");
  }

  // Exact energy of GPU i between two CLOCK_MONOTONIC instants.
  double truth_j(std::size_t i, double begin_s, double end_s) const {
    const double epoch_s = static_cast<double>(epoch_ns_) / 1e9;
    return gpus_[i].power.energy_j(end_s - epoch_s) - gpus_[i].power.energy_j(begin_s - epoch_s);
  }
  // Scenario time of a CLOCK_MONOTONIC instant, and the reverse.
  double scenario_s(double mono_s) const { return mono_s - static_cast<double>(epoch_ns_) / 1e9; }
  double now_scenario_s() const { return static_cast<double>(monotonic_ns() - epoch_ns_) / 1e9; }
  std::size_t size() const { return gpus_.size(); }

  joules_status open(joules_monitor** m, const char* variant = "full") const {
    joules_options o;
    joules_options_init(&o);
    o.backend = JOULES_BACKEND_NVML;
    const std::string lib = std::string(FAKE_NVML_DIR) + "/" + variant + "/libnvidia-ml.so.1";
    o.nvml_library = lib.c_str();
    o.gpus = "all";
    o.cpu = 0;
    return joules_monitor_open(&o, m);
  }

 private:
  std::vector<gpu> gpus_;
  std::string scenario_;
  std::int64_t epoch_ns_ = 0;
};

struct window_numbers {
  joules_status status = JOULES_OK;
  joules_result r{};
  std::vector<joules_device_energy> devices;
};

inline window_numbers result_of(joules_monitor* m, joules_window_id id,
                                std::int64_t timeout_ms = -1) {
  window_numbers n;
  n.r.struct_size = sizeof(joules_result);
  n.devices.resize(joules_device_count(m));
  n.status = joules_window_result(m, id, timeout_ms, &n.r, n.devices.data(), n.devices.size());
  return n;
}

// Every device's energy against the truth: within `rel` of it plus `edge_s` seconds of the
// device's average power (where an instant may land on a machine so loaded that the reads
// around it came late), and the truth within the device's error bound, always.  Returns the
// largest relative error seen.
inline double expect_truth(const fake_machine& f, const window_numbers& n, double rel,
                           double edge_s = 0.0) {
  // rel < 0: the error bound only.
  double worst = 0.0;
  for (std::size_t i = 0; i < n.devices.size(); ++i) {
    const auto& d = n.devices[i];
    const double truth = f.truth_j(i, n.r.begin_monotonic_s, n.r.end_monotonic_s);
    const double err = std::abs(d.energy_j - truth);
    const double power = n.r.duration_s > 0 ? truth / n.r.duration_s : 0.0;
    if (rel >= 0) {
      EXPECT_LE(err, rel * truth + edge_s * power + 1e-6)
          << "GPU " << i << ": " << d.energy_j << " J, truth " << truth << " over "
          << n.r.duration_s << " s";
    }
    EXPECT_LE(err, d.error_j + 1e-6)
        << "GPU " << i << ": " << d.energy_j << " J +- " << d.error_j << ", truth " << truth;
    if (truth > 0) worst = std::max(worst, err / truth);
  }
  double sum = 0.0;
  double bound = 0.0;
  for (const auto& d : n.devices) {
    sum += d.energy_j;
    bound += d.error_j;
  }
  EXPECT_NEAR(n.r.total_energy_j, sum, 1e-6);
  EXPECT_NEAR(n.r.gpu_energy_j, sum, 1e-6);
  EXPECT_NEAR(n.r.error_j, bound, 1e-6);
  return worst;
}

// Instants land within a few milliseconds of the truth on a quiet machine; this much on one so
// loaded that the sampler's reads around them come late (the error bound then says so).
inline constexpr double kEdgeS = 0.012;

class monitor_guard {
 public:
  explicit monitor_guard(joules_monitor* m) : m_(m) {}
  ~monitor_guard() { joules_monitor_close(m_); }
  monitor_guard(const monitor_guard&) = delete;
  monitor_guard& operator=(const monitor_guard&) = delete;
  joules_monitor* get() const { return m_; }

 private:
  joules_monitor* m_;
};

}  // namespace api_test
