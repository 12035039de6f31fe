#include "export/metrics/run_metrics.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "export/metrics/exposition.hpp"
#include "export/metrics/run_families.hpp"

namespace joules::exporter {
namespace {

window_result window(std::vector<std::optional<microjoules>> per_device, double start_t,
                     double end_t) {
  window_result w;
  w.start_t = start_t;
  w.end_t = end_t;
  for (const auto& e : per_device) {
    device_window d;
    d.energy_uj = e;
    if (e) w.energy_uj += *e;
    w.devices.push_back(d);
  }
  return w;
}

TEST(RunMetrics, WindowsAddUpPerDeviceAndInTotal) {
  run_metrics live({true, true});
  live.add_window(window({1'000'000, 2'000'000}, 0, 1));
  live.add_window(window({500'000, std::nullopt}, 1, 2));
  const run_state s = live.read();
  EXPECT_EQ(s.windows, 2U);
  EXPECT_DOUBLE_EQ(s.windows_energy_j, 3.5);
  EXPECT_DOUBLE_EQ(s.gpu_windows_energy_j[0], 1.5);
  EXPECT_DOUBLE_EQ(s.gpu_windows_energy_j[1], 2.0);
  EXPECT_FALSE(s.finished);
  live.finish(2.0);
  EXPECT_TRUE(live.read().finished);
  EXPECT_DOUBLE_EQ(live.read().finished_duration_s, 2.0);
}

TEST(RunMetrics, AStepWindowOfSeveralStepsIsDividedByThem) {
  // Four GPUs; a window covering 10 logged steps (a log every 10 steps).
  run_metrics live({true, true, true, true});
  live.add_step(20, 10, 1000, window({1'000'000, 1'000'000, 1'200'000, 800'000}, 5.0, 7.0));
  const run_state s = live.read();
  EXPECT_EQ(s.steps, 10U);
  EXPECT_EQ(s.last_step, 20U);
  EXPECT_EQ(s.total_steps, 1000U);
  EXPECT_DOUBLE_EQ(s.steps_energy_j, 4.0);
  EXPECT_DOUBLE_EQ(s.steps_duration_s, 2.0);
  EXPECT_DOUBLE_EQ(*s.last_step_energy_j, 0.4);
  EXPECT_DOUBLE_EQ(*s.last_step_duration_s, 0.2);
  EXPECT_DOUBLE_EQ(*s.gpu_last_step_energy_j[2], 0.12);
  // Median of {0.1, 0.1, 0.12, 0.08} is 0.1: the third GPU is 20 % above, the fourth 20 % below.
  EXPECT_NEAR(*s.gpu_step_deviation[0], 0.0, 1e-12);
  EXPECT_NEAR(*s.gpu_step_deviation[2], 0.2, 1e-12);
  EXPECT_NEAR(*s.gpu_step_deviation[3], -0.2, 1e-12);
}

TEST(RunMetrics, CpuAndDramAreNotComparedWithTheGpus) {
  run_metrics live({true, true, false});
  live.add_step(1, 1, std::nullopt, window({1'000'000, 1'000'000, 9'000'000}, 0, 1));
  const run_state s = live.read();
  EXPECT_FALSE(s.gpu_last_step_energy_j[2].has_value());
  EXPECT_FALSE(s.gpu_step_deviation[2].has_value());
  EXPECT_NEAR(*s.gpu_step_deviation[0], 0.0, 1e-12);
  EXPECT_DOUBLE_EQ(s.steps_energy_j, 11.0);  // the window's energy is the whole node's
}

TEST(RunMetrics, TrainingMetricsKeepTheirLatestValueAndAreBounded) {
  run_metrics live({true});
  std::vector<steps::metric> m = {{"loss", 2.5}, {"lr", 3e-4}};
  live.set_training_metrics(m);
  m = {{"loss", 2.25}};
  live.set_training_metrics(m);
  auto s = live.read();
  ASSERT_EQ(s.training.size(), 2U);
  EXPECT_EQ(s.training[0].first, "loss");
  EXPECT_DOUBLE_EQ(s.training[0].second, 2.25);
  std::vector<steps::metric> many;
  for (int i = 0; i < 200; ++i)
    many.push_back({"m" + std::to_string(i), 1.0});
  live.set_training_metrics(many);
  EXPECT_EQ(live.read().training.size(), run_metrics::kMaxTrainingMetrics);
}

TEST(RunMetrics, ReadersAndWritersOnDifferentThreads) {
  // Run under TSan in CI: the /metrics thread reads while the main thread writes.
  run_metrics live({true, true});
  std::atomic<bool> done{false};
  std::thread reader([&] {
    std::uint64_t seen = 0;
    while (!done.load()) {
      const run_state s = live.read();
      EXPECT_GE(s.steps, seen);
      seen = s.steps;
    }
  });
  for (std::uint64_t i = 1; i <= 2000; ++i) {
    const auto w = window({1000, 1000}, 0, 1);
    live.add_window(w);
    live.add_step(i, 1, std::nullopt, w);
    std::vector<steps::metric> m = {{"loss", 1.0 / static_cast<double>(i)}};
    live.set_training_metrics(m);
  }
  done = true;
  reader.join();
  EXPECT_EQ(live.read().steps, 2000U);
}

device_info gpu(unsigned index) {
  device_info d;
  d.index = index;
  d.uuid = "GPU-" + std::to_string(index);
  d.name = "NVIDIA H100 80GB HBM3";
  d.has_energy_counter = true;
  return d;
}

// The snapshot of two GPUs taken at `t`, reading `e0_j` and `e1_j` joules.
sampler_snapshot two_gpus_at(std::chrono::milliseconds t, double e0_j, double e1_j) {
  sampler_snapshot snap;
  snap.taken = mono_time{} + t;
  snap.devices.resize(2);
  snap.devices[0].energy_j = e0_j;
  snap.devices[1].energy_j = e1_j;
  return snap;
}

TEST(RunFamilies, LiveEnergyComesFromSnapshotsAndNeverGoesDown) {
  exposition e;
  const label_set base{{"run_id", "r1"}, {"hostname", "n1"}};
  run_families f(e, {gpu(0), gpu(1)}, base, "wrap");
  run_metrics live({true, true});
  live.set_started(mono_time{} + std::chrono::seconds(10), {0.0, 20.0});

  sampler_snapshot snap =
      two_gpus_at(std::chrono::seconds(12), 100.0, 220.0);  // GPU 1: 20 J before
  snap.devices[0].power_w = 50.0;
  snap.devices[1].power_w = 70.0;
  f.fill(&snap, live.read());
  const std::string text = e.text();
  EXPECT_NE(text.find("joules_run_energy_joules_total{run_id=\"r1\",hostname=\"n1\"} 300\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("joules_run_duration_seconds{run_id=\"r1\",hostname=\"n1\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("joules_run_power_watts{run_id=\"r1\",hostname=\"n1\"} 120\n"),
            std::string::npos);
  EXPECT_NE(text.find("joules_run_gpu_energy_joules_total{gpu=\"1\",uuid=\"GPU-1\",model=\"NVIDIA "
                      "H100 80GB HBM3\",run_id=\"r1\",hostname=\"n1\"} 200\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("joules_run_info{run_id=\"r1\",hostname=\"n1\",subcommand=\"wrap\"} 1\n"),
            std::string::npos);

  // The run ends: the exact window totals are a little lower than the last live reading, yet
  // the counter must not go down (Prometheus would read a reset).
  live.add_window(window({99'000'000, 200'500'000}, 10, 12));
  live.finish(2.0);
  e.clear_samples();
  f.fill(&snap, live.read());
  const std::string after = e.text();
  EXPECT_NE(after.find("joules_run_energy_joules_total{run_id=\"r1\",hostname=\"n1\"} 300\n"),
            std::string::npos)
      << after;
  EXPECT_NE(after.find("hostname=\"n1\"} 200.5\n"), std::string::npos) << after;
  EXPECT_NE(after.find("joules_run_finished{run_id=\"r1\",hostname=\"n1\"} 1\n"),
            std::string::npos);
  EXPECT_EQ(after.find("joules_run_power_watts"), std::string::npos);  // no live power after
}

TEST(RunFamilies, AfterTheCommandEndsTheLastShownEnergyIsHeldUntilTheExactTotals) {
  exposition e;
  const label_set base{{"run_id", "r1"}, {"hostname", "n1"}};
  run_families f(e, {gpu(0), gpu(1)}, base, "run");
  run_metrics live({true, true});
  live.set_started(mono_time{} + std::chrono::seconds(10), {0.0, 20.0});
  sampler_snapshot snap = two_gpus_at(std::chrono::seconds(12), 100.0, 220.0);
  f.fill(&snap, live.read());
  EXPECT_NE(e.text().find("joules_run_energy_joules_total{run_id=\"r1\",hostname=\"n1\"} 300\n"),
            std::string::npos)
      << e.text();

  // The command ends at 12.1 s; a reading taken while the sampler closes the last windows
  // counts energy after that end, and is not shown.
  live.command_ended();
  snap = two_gpus_at(std::chrono::milliseconds(12'500), 125.0, 255.0);
  e.clear_samples();
  f.fill(&snap, live.read());
  const std::string held = e.text();
  EXPECT_NE(held.find("joules_run_energy_joules_total{run_id=\"r1\",hostname=\"n1\"} 300\n"),
            std::string::npos)
      << held;
  EXPECT_NE(held.find("gpu=\"1\",uuid=\"GPU-1\",model=\"NVIDIA H100 80GB HBM3\",run_id=\"r1\","
                      "hostname=\"n1\"} 200\n"),
            std::string::npos)
      << held;

  // The exact totals, a little above what was shown and far below that late reading.
  live.add_window(window({105'000'000, 201'000'000}, 10, 12.1));
  live.finish(2.1);
  e.clear_samples();
  f.fill(&snap, live.read());
  const std::string after = e.text();
  EXPECT_NE(after.find("joules_run_energy_joules_total{run_id=\"r1\",hostname=\"n1\"} 306\n"),
            std::string::npos)
      << after;
  EXPECT_NE(after.find("hostname=\"n1\"} 105\n"), std::string::npos) << after;
  EXPECT_NE(after.find("hostname=\"n1\"} 201\n"), std::string::npos) << after;
}

TEST(RunFamilies, StepsTrainingMetricsAndPrediction) {
  exposition e;
  run_families f(e, {gpu(0)}, label_set{{"hostname", "n1"}}, "wrap");
  run_metrics live({true});
  live.add_step(7, 1, 100, window({2'000'000}, 0, 0.5));
  std::vector<steps::metric> m = {{"loss", 1.75}};
  live.set_training_metrics(m);
  prediction p;
  p.energy_j = 200;
  p.duration_s = 50;
  p.remaining_s = 46.5;
  p.total_steps = 100;
  live.set_prediction(p);
  f.fill(nullptr, live.read());
  const std::string t = e.text();
  for (const auto* line :
       {"joules_run_steps_total{hostname=\"n1\"} 1\n", "joules_run_last_step{hostname=\"n1\"} 7\n",
        "joules_run_total_steps{hostname=\"n1\"} 100\n",
        "joules_run_last_step_energy_joules{hostname=\"n1\"} 2\n",
        "joules_run_last_step_duration_seconds{hostname=\"n1\"} 0.5\n",
        "joules_run_training_metric{hostname=\"n1\",metric=\"loss\"} 1.75\n",
        "joules_run_predicted_energy_joules{hostname=\"n1\"} 200\n",
        "joules_run_predicted_remaining_seconds{hostname=\"n1\"} 46.5\n",
        "joules_run_gpu_last_step_energy_joules{gpu=\"0\",uuid=\"GPU-0\",model=\"NVIDIA H100 "
        "80GB HBM3\",hostname=\"n1\"} 2\n"}) {
    EXPECT_NE(t.find(line), std::string::npos) << line << t;
  }
  // One GPU has no median to deviate from; no snapshot yet: no energy, no made-up zeros.
  EXPECT_EQ(t.find("joules_run_gpu_step_energy_deviation_ratio"), std::string::npos);
  EXPECT_EQ(t.find("joules_run_energy_joules_total"), std::string::npos);
}

}  // namespace
}  // namespace joules::exporter
