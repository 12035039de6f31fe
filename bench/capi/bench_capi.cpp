// What libjoules costs the code it measures: joules_window_begin + joules_window_end, from the
// caller's thread, with a monitor reading 8 fake GPUs (tests/fake_nvml) whose every NVML call
// takes 20 us, as a loaded driver's do.  Each begin and end asks the reading thread for dense
// reads around its instant, so the monitor is busy the whole time, as it is around real steps.
// The goal: at most 10 us per begin + end (docs/benchmarks.md).
//
//   cmake --build build/release --target bench_capi fake_nvml
//   build/release/bench/capi/bench_capi
#include <benchmark/benchmark.h>
#include <joules/joules.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

namespace {

joules_monitor* open_eight_gpus() {
  std::string devices;
  for (int i = 0; i < 8; ++i) {
    devices += std::string(i ? ", " : "") +
               "{\"latency_us\": 20, \"energy_counter\": {\"update_ms\": 100, \"phase_ms\": " +
               std::to_string(7 * i) +
               "}, \"power\": {\"type\": \"constant\", \"watts\": " + std::to_string(300 + 40 * i) +
               "}}";
  }
  const std::string scenario = "{\"devices\": [" + devices + "]}";
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const long long epoch =
      static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec - 10'000'000'000LL;
  setenv("FAKE_NVML_SCENARIO", scenario.c_str(), 1);
  setenv("FAKE_NVML_EPOCH_NS", std::to_string(epoch).c_str(), 1);
  const std::string lib = std::string(FAKE_NVML_DIR) + "/full/libnvidia-ml.so.1";
  joules_options o;
  joules_options_init(&o);
  o.backend = JOULES_BACKEND_NVML;
  o.nvml_library = lib.c_str();
  o.gpus = "all";
  o.cpu = 0;
  joules_monitor* m = nullptr;
  if (joules_monitor_open(&o, &m) != JOULES_OK) {
    std::fprintf(stderr, "bench_capi: %s\n", joules_last_error());
    std::exit(1);
  }
  // Past the start burst: the counters' update periods are learnt.
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  return m;
}

joules_monitor* monitor() {
  static joules_monitor* const m = open_eight_gpus();
  return m;
}

// The pairs' own latency as the caller sees it, wall time: p50 and p99 (counters in µs).
void percentiles(benchmark::State& state, std::vector<double>& ns) {
  if (ns.empty()) return;
  std::sort(ns.begin(), ns.end());
  state.counters["p50_us"] = ns[ns.size() / 2] / 1e3;
  state.counters["p99_us"] = ns[ns.size() * 99 / 100] / 1e3;
  state.counters["max_us"] = ns.back() / 1e3;
}

void BM_window_begin_end(benchmark::State& state) {
  joules_monitor* m = monitor();
  std::vector<joules_window_id> ids;
  ids.reserve(4096);
  std::vector<double> ns;
  ns.reserve(1 << 22);
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    joules_window_begin(m, "step");
    joules_window_id id = 0;
    joules_window_end(m, "step", &id);
    const auto t1 = std::chrono::steady_clock::now();
    if (ns.size() < ns.capacity())
      ns.push_back(static_cast<double>(std::chrono::nanoseconds(t1 - t0).count()));
    ids.push_back(id);
    if (ids.size() == ids.capacity()) {
      // The windows' numbers are kept until released: release them outside the timing.
      state.PauseTiming();
      for (const auto w : ids)
        joules_window_release(m, w);
      ids.clear();
      state.ResumeTiming();
    }
  }
  for (const auto w : ids)
    joules_window_release(m, w);
  percentiles(state, ns);
}
BENCHMARK(BM_window_begin_end)->MinTime(3.0)->UseRealTime();

// Windows nested in a step, as a trainer instruments forward, backward and the optimizer.
void BM_nested_windows(benchmark::State& state) {
  joules_monitor* m = monitor();
  std::vector<joules_window_id> ids;
  ids.reserve(4096);
  for (auto _ : state) {
    joules_window_begin(m, "step");
    joules_window_begin(m, "forward");
    joules_window_id id = 0;
    joules_window_end(m, "forward", &id);
    ids.push_back(id);
    joules_window_end(m, "step", &id);
    ids.push_back(id);
    if (ids.size() + 2 > ids.capacity()) {
      state.PauseTiming();
      for (const auto w : ids)
        joules_window_release(m, w);
      ids.clear();
      state.ResumeTiming();
    }
  }
  for (const auto w : ids)
    joules_window_release(m, w);
}
BENCHMARK(BM_nested_windows)->MinTime(3.0)->UseRealTime();

// The step call with a monitor (a window per step) and no wrap.
void BM_step(benchmark::State& state) {
  joules_monitor* m = monitor();
  std::vector<joules_window_id> ids;
  ids.reserve(4096);
  for (auto _ : state) {
    joules_window_id id = 0;
    joules_step(m, 0, 4096, &id);
    ids.push_back(id);
    if (ids.size() == ids.capacity()) {
      state.PauseTiming();
      for (const auto w : ids)
        joules_window_release(m, w);
      ids.clear();
      state.ResumeTiming();
    }
  }
  for (const auto w : ids)
    joules_window_release(m, w);
}
BENCHMARK(BM_step)->MinTime(3.0)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
