#include "export/metrics/gpu_metrics.hpp"
#include "backends/nvml/nvml_decode.hpp"

#include <gtest/gtest.h>

#include "export/metrics/footprint_metrics.hpp"
#include "export/metrics/self_metrics.hpp"
#include "kubelet/pod_resources.hpp"

namespace joules::exporter {
namespace {

device_info h100(unsigned index) {
  device_info d;
  d.index = index;
  d.uuid = "GPU-" + std::to_string(index);
  d.pci_bus_id = "00000000:1" + std::to_string(index) + ":00.0";
  d.name = "NVIDIA H100 80GB HBM3";
  d.architecture = "hopper";
  d.has_energy_counter = true;
  d.power_limit = watts{700};
  return d;
}

health_reading health() {
  health_reading h;
  h.gpu_util_percent = 93;
  h.memory_total_bytes = 85520809984ULL;
  h.memory_used_bytes = 1073741824ULL;
  h.memory_reserved_bytes = 536870912ULL;
  h.temperature_c = 64;
  h.sm_clock_mhz = 1980;
  h.throttle = nvml::decode_clock_events(0x4);  // power cap (docs/nvml-notes.md §7)
  h.remapped_rows_corrected = 2;
  h.remapped_rows_uncorrected = 0;
  h.ecc_uncorrected_volatile = 1;
  h.pcie_generation = 5;
  h.tensor_activity_percent = 61.5;
  h.encoder_util_percent = 25;
  h.decoder_util_percent = 0;
  h.xid_known = true;
  h.xid_counts = {{13, 2}, {79, 1}};
  h.last_xid = 79;
  h.nvlink_crc_flit_errors = 7;
  h.nvlink_crc_data_errors = 0;
  h.nvlink_replay_errors = 2;
  h.nvlink_recovery_errors = 1;
  h.nvlink_links = {{0, true}, {1, false}};
  return h;
}

bool has(const std::string& text, std::string_view line) {
  return text.find(line) != std::string::npos;
}

TEST(GpuMetrics, ReadingsInSiUnitsWithTheGpusLabels) {
  exposition e;
  backend_meta meta;
  meta.driver_version = "570.86.15";
  gpu_metrics m(e, {h100(0), h100(1)}, label_set{{"hostname", "node-1"}, {"cluster", "a"}}, meta,
                false);
  sampler_snapshot snap;
  snap.devices.resize(2);
  snap.devices[0].power_w = 312.5;
  snap.devices[0].energy_j = 1234.5;
  snap.devices[0].counter_mj = 9000000;
  snap.devices[0].health = health();
  snap.devices[1].lost = true;
  snap.devices[1].power_w = 100.0;
  m.fill(snap);
  const std::string t = e.text();
  const std::string g0 =
      R"({gpu="0",uuid="GPU-0",model="NVIDIA H100 80GB HBM3",hostname="node-1",cluster="a"})";
  for (const std::string& line :
       {"joules_gpu_power_watts" + g0 + " 312.5\n",
        "joules_gpu_energy_joules_total" + g0 + " 1234.5\n",
        "joules_gpu_power_limit_watts" + g0 + " 700\n",
        "joules_gpu_utilization_ratio" + g0 + " 0.93\n",
        "joules_gpu_memory_free_bytes" + g0 + " 83910197248\n",
        "joules_gpu_temperature_celsius" + g0 + " 64\n",
        "joules_gpu_sm_clock_hertz" + g0 + " 1980000000\n",
        "joules_gpu_tensor_active_ratio" + g0 + " 0.615\n", "joules_gpu_lost" + g0 + " 0\n",
        "joules_gpu_encoder_utilization_ratio" + g0 + " 0.25\n",
        "joules_gpu_decoder_utilization_ratio" + g0 + " 0\n"}) {
    EXPECT_TRUE(has(t, line)) << line << t;
  }
  const std::string base =
      R"(gpu="0",uuid="GPU-0",model="NVIDIA H100 80GB HBM3",hostname="node-1",cluster="a")";
  EXPECT_TRUE(has(t, "joules_gpu_throttle_reason_active{" + base + ",reason=\"power_cap\"} 1\n"));
  EXPECT_TRUE(has(t, "joules_gpu_throttle_reason_active{" + base + ",reason=\"hw_thermal\"} 0\n"));
  EXPECT_TRUE(has(t, "joules_gpu_remapped_rows_total{" + base + ",type=\"correctable\"} 2\n"));
  EXPECT_TRUE(has(
      t, "joules_gpu_ecc_errors_total{" + base + ",type=\"uncorrected\",scope=\"volatile\"} 1\n"));
  EXPECT_TRUE(has(t, "joules_gpu_info{" + base +
                         ",pci_bus_id=\"00000000:10:00.0\",architecture=\"hopper\","
                         "driver_version=\"570.86.15\"} 1\n"));
  // XIDs by number, as counters.
  EXPECT_TRUE(has(t, "# TYPE joules_gpu_xid_errors_total counter\n"));
  EXPECT_TRUE(has(t, "joules_gpu_xid_errors_total{" + base + ",xid=\"13\"} 2\n")) << t;
  EXPECT_TRUE(has(t, "joules_gpu_xid_errors_total{" + base + ",xid=\"79\"} 1\n")) << t;
  // NVLink errors by type, links by index.
  EXPECT_TRUE(has(t, "joules_gpu_nvlink_errors_total{" + base + ",type=\"crc_flit\"} 7\n")) << t;
  EXPECT_TRUE(has(t, "joules_gpu_nvlink_errors_total{" + base + ",type=\"recovery\"} 1\n"));
  EXPECT_TRUE(has(t, "joules_gpu_nvlink_link_up{" + base + ",link=\"0\"} 1\n"));
  EXPECT_TRUE(has(t, "joules_gpu_nvlink_link_up{" + base + ",link=\"1\"} 0\n"));
  // Unknown is not zero: no fan reading, no fan series; ECC aggregate unknown, left out.
  EXPECT_FALSE(has(t, "joules_gpu_fan_speed_ratio"));
  EXPECT_FALSE(has(t, "scope=\"aggregate\""));
  // A lost GPU says so and shows no stale readings.
  EXPECT_TRUE(has(t, R"(joules_gpu_lost{gpu="1",uuid="GPU-1")"));
  EXPECT_FALSE(has(t, R"(joules_gpu_power_watts{gpu="1")"));
  EXPECT_FALSE(has(t, "DCGM_"));
}

TEST(GpuMetrics, DcgmCompatUsesDcgmExportersNamesLabelsAndUnits) {
  exposition e;
  backend_meta meta;
  meta.driver_version = "570.86.15";
  gpu_metrics m(e, {h100(3)}, label_set{{"hostname", "node-1"}}, meta, true);
  sampler_snapshot snap;
  snap.devices.resize(1);
  snap.devices[0].power_w = 312.5;
  snap.devices[0].counter_mj = 9000000;
  snap.devices[0].health = health();
  m.fill(snap);
  const std::string t = e.text();
  const std::string l =
      R"({gpu="3",UUID="GPU-3",pci_bus_id="00000000:13:00.0",device="nvidia3",modelName="NVIDIA H100 80GB HBM3",hostname="node-1",Hostname="node-1",DCGM_FI_DRIVER_VERSION="570.86.15"})";
  EXPECT_TRUE(has(t, "DCGM_FI_DEV_POWER_USAGE" + l + " 312.5\n")) << t;
  EXPECT_TRUE(has(t, "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"));
  EXPECT_TRUE(has(t, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" + l + " 9000000\n"));
  EXPECT_TRUE(has(t, "DCGM_FI_DEV_GPU_UTIL" + l + " 93\n"));
  EXPECT_TRUE(has(t, "DCGM_FI_DEV_FB_USED" + l + " 1024\n"));
  EXPECT_TRUE(has(t, "DCGM_FI_DEV_FB_FREE" + l + " 80023\n"));
  EXPECT_TRUE(has(t, "DCGM_FI_DEV_SM_CLOCK" + l + " 1980\n"));
  EXPECT_TRUE(has(t, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE" + l + " 0.615\n"));
  EXPECT_TRUE(has(t, "DCGM_FI_DEV_ENC_UTIL" + l + " 25\n"));
  EXPECT_TRUE(has(t, "DCGM_FI_DEV_DEC_UTIL" + l + " 0\n"));
  EXPECT_TRUE(has(t, "# TYPE DCGM_FI_DEV_XID_ERRORS gauge\n"));
  EXPECT_TRUE(has(t, "DCGM_FI_DEV_XID_ERRORS" + l + " 79\n"));
  // Power cap, bit 0x4 of docs/nvml-notes.md §7.
  EXPECT_TRUE(has(t, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" + l + " 4\n")) << t;
  EXPECT_TRUE(has(t, "# TYPE DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL counter\n"));
  EXPECT_TRUE(has(t, "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL" + l + " 7\n"));
  EXPECT_TRUE(has(t, "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL" + l + " 2\n"));
  EXPECT_TRUE(has(t, "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL" + l + " 1\n"));
}

TEST(GpuMetrics, DcgmXidIsZeroBeforeTheFirstAndAbsentWithoutEvents) {
  exposition e;
  gpu_metrics m(e, {h100(0), h100(1)}, label_set{{"hostname", "n"}}, backend_meta{}, true);
  sampler_snapshot snap;
  snap.devices.resize(2);
  snap.devices[0].health = health_reading{};
  snap.devices[0].health->xid_known = true;   // watching, none yet
  snap.devices[1].health = health_reading{};  // the driver reports no events
  m.fill(snap);
  const std::string t = e.text();
  EXPECT_TRUE(has(
      t,
      R"(DCGM_FI_DEV_XID_ERRORS{gpu="0",UUID="GPU-0",pci_bus_id="00000000:10:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",hostname="n",Hostname="n",DCGM_FI_DRIVER_VERSION=""} 0)"
      "\n"))
      << t;
  EXPECT_FALSE(has(t, R"(DCGM_FI_DEV_XID_ERRORS{gpu="1")")) << t;
  EXPECT_FALSE(has(t, "joules_gpu_xid_errors_total{")) << t;
}

TEST(GpuMetrics, CpuAndDramFromRaplGetTheirOwnNames) {
  exposition e;
  device_info cpu;
  cpu.kind = device_kind::cpu;
  cpu.uuid = "intel-rapl:0";
  cpu.name = "package-0";
  cpu.has_energy_counter = true;
  device_info dram = cpu;
  dram.kind = device_kind::dram;
  dram.uuid = "intel-rapl:0:0";
  dram.name = "dram";
  gpu_metrics m(e, {h100(0), cpu, dram}, label_set{{"hostname", "n"}}, backend_meta{}, false);
  sampler_snapshot snap;
  snap.devices.resize(3);
  snap.devices[0].power_w = 300;
  snap.devices[1].power_w = 95.5;
  snap.devices[1].energy_j = 10;
  snap.devices[2].energy_j = 4;
  m.fill(snap);
  const std::string t = e.text();
  EXPECT_TRUE(has(
      t, R"(joules_cpu_power_watts{domain="intel-rapl:0",model="package-0",hostname="n"} 95.5)"))
      << t;
  EXPECT_TRUE(has(
      t,
      R"(joules_cpu_energy_joules_total{domain="intel-rapl:0",model="package-0",hostname="n"} 10)"));
  EXPECT_TRUE(has(
      t,
      R"(joules_dram_energy_joules_total{domain="intel-rapl:0:0",model="dram",hostname="n"} 4)"));
  EXPECT_FALSE(has(t, R"(joules_gpu_power_watts{domain)"));
  EXPECT_FALSE(has(t, R"(joules_gpu_lost{domain)"));
}

TEST(SelfMetrics, UpOnlyWithFreshReadingsAndNoLostGpu) {
  const mono_time t0 = mono_time{} + std::chrono::seconds(100);
  auto text = [&](const sampler_snapshot* snap, mono_time now,
                  std::optional<bool> web_config_ok = std::nullopt) {
    exposition per_reading;
    exposition per_scrape;
    self_metrics m(per_reading, per_scrape, label_set{{"hostname", "n"}}, backend_meta{}, 5.0);
    m.fill(snap);
    m.fill_live(snap, now, serving_stats{3, 0.0012, web_config_ok});
    return per_reading.text() + per_scrape.text();
  };
  sampler_snapshot snap;
  snap.taken = t0;
  snap.ticks = 17;
  snap.devices.resize(2);
  std::string t = text(&snap, t0 + std::chrono::seconds(1));
  EXPECT_TRUE(has(t, "joules_up{hostname=\"n\"} 1\n")) << t;
  EXPECT_TRUE(has(t, "joules_scrapes_total{hostname=\"n\"} 3\n"));
  EXPECT_TRUE(has(t, "joules_scrape_duration_seconds{hostname=\"n\"} 0.0012\n"));
  EXPECT_TRUE(has(t, "joules_sampler_ticks_total{hostname=\"n\"} 17\n"));
  EXPECT_TRUE(has(t, "joules_reading_age_seconds{hostname=\"n\"} 1\n"));
  EXPECT_TRUE(has(t, "joules_build_info{hostname=\"n\",version=\"" JOULES_VERSION "\""));
  // serve --web-config-file only: whether the file's last reading was good.
  EXPECT_FALSE(has(t, "joules_web_config_last_reload_successful"));
  EXPECT_TRUE(
      has(text(&snap, t0, true), "joules_web_config_last_reload_successful{hostname=\"n\"} 1\n"));
  EXPECT_TRUE(
      has(text(&snap, t0, false), "joules_web_config_last_reload_successful{hostname=\"n\"} 0\n"));
  EXPECT_TRUE(has(text(&snap, t0 + std::chrono::seconds(6)), "joules_up{hostname=\"n\"} 0\n"));
  EXPECT_TRUE(has(text(nullptr, t0), "joules_up{hostname=\"n\"} 0\n"));
  snap.devices[1].lost = true;
  EXPECT_TRUE(has(text(&snap, t0), "joules_up{hostname=\"n\"} 0\n"));
  // Not lost, but neither energy nor power answers any more: not every device is readable.
  snap.devices[1].lost = false;
  snap.devices[1].silent = true;
  EXPECT_TRUE(has(text(&snap, t0), "joules_up{hostname=\"n\"} 0\n"));
}

TEST(FootprintMetrics, ComponentStatesFromWhatWasAskedAndFound) {
  component_options all;
  std::vector<component_status> found = {
      {device_kind::cpu, energy_method::none, "readable by root only", "sudo chmod a+r ...", {}},
      {device_kind::dram, energy_method::none, "no dram domain", "", {}}};
  auto s = component_states(all, found, 2);
  ASSERT_EQ(s.size(), 3U);
  EXPECT_EQ(s[0].component + "=" + s[0].state, "gpu=measured");
  EXPECT_EQ(s[1].component + "=" + s[1].state, "cpu=unreadable");
  EXPECT_EQ(s[2].component + "=" + s[2].state, "dram=absent");
  found = {{device_kind::cpu, energy_method::estimated, "TDP", "", {}},
           {device_kind::dram, energy_method::counter, "RAPL", "", {}}};
  s = component_states(all, found, 0);
  EXPECT_EQ(s[0].state, "absent");
  EXPECT_EQ(s[1].state, "estimated");
  EXPECT_EQ(s[2].state, "measured");
  component_options gpu_only;
  gpu_only.cpu = gpu_only.dram = false;
  s = component_states(gpu_only, {}, 1);
  EXPECT_EQ(s[1].state, "off");
  EXPECT_EQ(s[2].state, "off");
  // The sim backend's GPUs are simulated, never measured.
  s = component_states(gpu_only, {}, 2, /*gpus_simulated=*/true);
  EXPECT_EQ(s[0].state, "simulated");
  device_info sim;
  sim.simulated = true;
  device_info real;
  EXPECT_TRUE(gpus_simulated({sim, sim}));
  EXPECT_FALSE(gpus_simulated({sim, real}));
  EXPECT_FALSE(gpus_simulated({}));
}

TEST(FootprintMetrics, KwhCo2eAndCostWithProvenanceOnTheValues) {
  carbon::settings in;
  in.pue = 1.5;
  in.region = "DE";
  in.price_per_kwh = 0.25;
  in.currency = "EUR";
  const carbon::factors f = carbon::resolve(in);
  exposition e;
  footprint_metrics m(e, label_set{{"run_id", "r"}}, "joules_run", f,
                      {{"gpu", "measured"}, {"cpu", "off"}});
  m.fill(3.6e6);  // 1 kWh measured, 1.5 kWh from the grid
  const std::string t = e.text();
  EXPECT_TRUE(has(t, "joules_run_energy_kwh_total{run_id=\"r\"} 1.5\n")) << t;
  const std::string grid = "region=\"DE\",source=\"" + f.grid->source + "\",year=\"" +
                           std::to_string(*f.grid->year) + "\",method=\"country_average\"";
  EXPECT_TRUE(has(t, "joules_run_co2e_grams_total{run_id=\"r\"," + grid + "} "));
  EXPECT_NEAR(carbon::assess(f, 3.6e6).co2e_g.value(), 1.5 * f.grid->g_per_kwh, 1e-9);
  EXPECT_TRUE(has(
      t,
      "joules_run_cost_total{run_id=\"r\",currency=\"EUR\",source=\"--price-per-kwh\"} 0.375\n"));
  EXPECT_TRUE(has(t, "joules_pue{run_id=\"r\",source=\"--pue\"} 1.5\n"));
  EXPECT_TRUE(has(t, "joules_carbon_intensity_grams_per_kwh{run_id=\"r\"," + grid + "} "));
  EXPECT_TRUE(has(t, "joules_component_status{run_id=\"r\",component=\"cpu\",status=\"off\"} 1\n"));
  EXPECT_TRUE(
      has(t, "joules_component_status{run_id=\"r\",component=\"cpu\",status=\"measured\"} 0\n"));
  // Before any reading: factors and states, no energy yet (unknown is not zero).
  exposition e2;
  footprint_metrics m2(e2, label_set{}, "joules_node", carbon::resolve({}), {});
  m2.fill(std::nullopt);
  EXPECT_FALSE(has(e2.text(), "joules_node_energy_kwh_total"));
  EXPECT_TRUE(has(e2.text(), "joules_pue{source=\"default\"} 1\n"));
  EXPECT_FALSE(has(e2.text(), "co2e"));
}

}  // namespace
}  // namespace joules::exporter

namespace joules::exporter {
namespace {

health_reading mig_health() {
  health_reading h = health();
  h.gpu_util_percent.reset();  // not reported in MIG mode
  h.mig_enabled = true;
  mig_instance_reading a;
  a.uuid = "MIG-aaaa";
  a.name = "NVIDIA H100 80GB HBM3 MIG 3g.40gb";
  a.profile = "3g.40gb";
  a.gpu_instance = 1;
  a.compute_instance = 0;
  a.memory_total_bytes = 42949672960ULL;
  a.memory_used_bytes = 3221225472ULL;
  mig_instance_reading b = a;  // a second compute instance of GPU instance 1
  b.uuid = "MIG-bbbb";
  b.compute_instance = 1;
  mig_instance_reading c;
  c.uuid = "MIG-cccc";
  c.profile = "1g.10gb";
  c.gpu_instance = 9;
  c.memory_total_bytes = 10737418240ULL;
  c.memory_used_bytes = 0;
  h.mig_instances = {a, b, c, a};  // the driver listing one twice must not break the scrape
  return h;
}

TEST(GpuMetrics, MigInstancesGetTheirOwnSeriesAndTheGpuKeepsTheEnergy) {
  exposition e;
  backend_meta meta;
  meta.driver_version = "570.86.15";
  gpu_metrics m(e, {h100(0), h100(1)}, label_set{{"hostname", "n"}}, meta, false);
  sampler_snapshot snap;
  snap.devices.resize(2);
  snap.devices[0].energy_j = 1000.0;
  snap.devices[0].health = mig_health();
  snap.devices[1].energy_j = 500.0;
  snap.devices[1].health = health();
  snap.devices[1].health->mig_enabled = false;
  m.fill(snap);
  const std::string t = e.text();
  const std::string g0 = R"(gpu="0",uuid="GPU-0",model="NVIDIA H100 80GB HBM3",hostname="n")";
  const std::string i10 = g0 + R"(,gpu_instance="1",compute_instance="0",mig_profile="3g.40gb")";
  EXPECT_TRUE(has(t, "joules_gpu_mig_mode{" + g0 + "} 1\n")) << t;
  EXPECT_TRUE(has(t, R"(joules_gpu_mig_mode{gpu="1",uuid="GPU-1")")) << t;
  EXPECT_TRUE(has(t, "joules_gpu_mig_instances{" + g0 + "} 3\n")) << t;
  EXPECT_TRUE(has(t, "joules_gpu_mig_info{" + i10 + ",mig_uuid=\"MIG-aaaa\"} 1\n")) << t;
  EXPECT_TRUE(has(t, "joules_gpu_mig_memory_used_bytes{" + i10 + "} 3221225472\n")) << t;
  EXPECT_TRUE(
      has(t, "joules_gpu_mig_memory_total_bytes{" + g0 +
                 R"(,gpu_instance="9",compute_instance="0",mig_profile="1g.10gb"} 10737418240)"))
      << t;
  // Energy is the GPU's alone: one series per GPU, none per instance, so a sum counts it once.
  std::size_t energy_series = 0;
  for (std::size_t at = t.find("\njoules_gpu_energy_joules_total{"); at != std::string::npos;
       at = t.find("\njoules_gpu_energy_joules_total{", at + 1)) {
    ++energy_series;
    EXPECT_EQ(t.substr(at, t.find('\n', at + 1) - at).find("gpu_instance"), std::string::npos);
  }
  EXPECT_EQ(energy_series, 2u);
  EXPECT_FALSE(has(t, R"(joules_gpu_mig_instances{gpu="1")"));  // MIG off: no instances
  EXPECT_FALSE(has(t, "GPU_I_ID"));
}

TEST(GpuMetrics, DcgmCompatLabelsInstancesWithGpuInstanceIdAndProfile) {
  exposition e;
  backend_meta meta;
  meta.driver_version = "570.86.15";
  gpu_metrics m(e, {h100(3)}, label_set{{"hostname", "node-1"}}, meta, true);
  sampler_snapshot snap;
  snap.devices.resize(1);
  snap.devices[0].power_w = 312.5;
  snap.devices[0].health = mig_health();
  m.fill(snap);
  const std::string t = e.text();
  const std::string head =
      R"(gpu="3",UUID="GPU-3",pci_bus_id="00000000:13:00.0",device="nvidia3",modelName="NVIDIA H100 80GB HBM3",)";
  const std::string tail =
      R"(hostname="node-1",Hostname="node-1",DCGM_FI_DRIVER_VERSION="570.86.15"})";
  EXPECT_TRUE(has(t, "DCGM_FI_DEV_FB_USED{" + head + R"(GPU_I_PROFILE="3g.40gb",GPU_I_ID="1",)" +
                         tail + " 3072\n"))
      << t;
  EXPECT_TRUE(has(t, "DCGM_FI_DEV_FB_FREE{" + head + R"(GPU_I_PROFILE="1g.10gb",GPU_I_ID="9",)" +
                         tail + " 10240\n"))
      << t;
  // Power stays the GPU's, without instance labels.
  EXPECT_TRUE(has(t, "DCGM_FI_DEV_POWER_USAGE{" + head + tail + " 312.5\n")) << t;
  std::size_t fb_used = 0;
  for (std::size_t at = t.find("\nDCGM_FI_DEV_FB_USED{"); at != std::string::npos;
       at = t.find("\nDCGM_FI_DEV_FB_USED{", at + 1))
    ++fb_used;
  EXPECT_EQ(fb_used, 3u);  // the GPU's, and one per GPU instance (1 and 9)
}

TEST(GpuMetrics, PodLabelsOnWhatOneContainerHoldsAndNeverTwice) {
  exposition e;
  backend_meta meta;
  meta.driver_version = "570.86.15";
  gpu_metrics m(e, {h100(0), h100(1)}, label_set{{"hostname", "n"}}, meta, true);
  sampler_snapshot snap;
  snap.devices.resize(2);
  snap.devices[0].energy_j = 1000.0;
  snap.devices[0].health = mig_health();
  snap.devices[1].energy_j = 500.0;
  // A kubelet's answer as hostile as it gets: GPU 0 held whole although it is in MIG mode, one
  // of its MIG devices held too, GPU 1 shared by two containers.
  const kubelet::device_pods pods = kubelet::pods_by_device({
      {"x", "ns", "c", "nvidia.com/gpu", "GPU-0"},
      {"y", "ns", "c", "nvidia.com/mig-3g.40gb", "MIG-aaaa"},
      {"s1", "ns", "c", "nvidia.com/gpu", "GPU-1::1"},
      {"s2", "ns", "c", "nvidia.com/gpu", "GPU-1::2"},
  });
  m.fill(snap, &pods);
  const std::string t = e.text();
  const std::string g0 = R"(gpu="0",uuid="GPU-0",model="NVIDIA H100 80GB HBM3")";
  const std::string x = R"(pod="x",namespace="ns",container="c")";
  EXPECT_TRUE(has(t, "joules_gpu_energy_joules_total{" + g0 + "," + x + R"(,hostname="n"} 1000)"))
      << t;
  EXPECT_TRUE(has(t, R"(DCGM_FI_DRIVER_VERSION="570.86.15",)" + x + "} ")) << t;
  // The MIG device carries its own holder only.
  const std::string i10 = g0 + R"(,hostname="n",gpu_instance="1",compute_instance="0")";
  EXPECT_TRUE(has(t, "joules_gpu_mig_memory_used_bytes{" + i10 +
                         R"(,mig_profile="3g.40gb",pod="y",namespace="ns",container="c"} )"))
      << t;
  EXPECT_FALSE(has(t, R"(pod="x",namespace="ns",container="c",hostname="n",gpu_instance)"));
  // The shared GPU: energy without pods, both containers on joules_gpu_pod_info.
  EXPECT_TRUE(has(
      t,
      R"(joules_gpu_energy_joules_total{gpu="1",uuid="GPU-1",model="NVIDIA H100 80GB HBM3",hostname="n"} 500)"))
      << t;
  EXPECT_TRUE(has(t, R"(device_id="GPU-1",pod="s1",namespace="ns",container="c"} 1)")) << t;
  EXPECT_TRUE(has(t, R"(device_id="GPU-1",pod="s2",namespace="ns",container="c"} 1)")) << t;
  EXPECT_TRUE(has(t, R"(device_id="MIG-aaaa",pod="y",namespace="ns",container="c"} 1)")) << t;
  // Without the kubelet's answer, none of it.
  exposition e2;
  gpu_metrics m2(e2, {h100(0)}, label_set{{"hostname", "n"}}, meta, false);
  m2.fill(snap);
  EXPECT_FALSE(has(e2.text(), "pod=")) << e2.text();
}

}  // namespace
}  // namespace joules::exporter
