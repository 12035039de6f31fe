#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "doctor/cuda_order.hpp"
#include "doctor/report.hpp"

namespace joules::doctor {
namespace {

device_info gpu(unsigned index, std::string pci, std::string name = "NVIDIA H100 80GB HBM3") {
  device_info d;
  d.index = index;
  d.uuid = "GPU-" + std::to_string(1000 + index) + "-aaaa";
  d.pci_bus_id = std::move(pci);
  d.name = std::move(name);
  d.architecture = "hopper";
  d.has_energy_counter = true;
  d.power = power_source::field_instant;
  d.power_limit = watts{700};
  d.default_power_limit = watts{700};
  return d;
}

std::vector<unsigned> nvml_of(const cuda_mapping& m) {
  std::vector<unsigned> out;
  for (const auto& e : m.devices)
    out.push_back(e.nvml_index);
  return out;
}

TEST(CudaOrder, PciBusOrderAndVisibleDevices) {
  // NVML index 0 sits on bus 0x3b, index 1 on bus 0x18: CUDA counts bus 0x18 first.
  const std::vector<device_info> gpus = {gpu(0, "00000000:3B:00.0"), gpu(1, "00000000:18:00.0"),
                                         gpu(2, "00000000:5E:00.0")};
  auto m = map_cuda(gpus, std::string("PCI_BUS_ID"), std::nullopt, {});
  EXPECT_EQ(m.order, "PCI_BUS_ID");
  EXPECT_TRUE(m.order_from_env);
  EXPECT_EQ(nvml_of(m), (std::vector<unsigned>{1, 0, 2}));
  EXPECT_FALSE(m.visible_indices_ambiguous);

  // "0" is CUDA's first GPU, which is NVML's 1; and indices now mean different GPUs.
  m = map_cuda(gpus, std::string("PCI_BUS_ID"), std::string("0,2"), {});
  EXPECT_EQ(nvml_of(m), (std::vector<unsigned>{1, 2}));
  EXPECT_EQ(m.devices[1].cuda_index, 1U);
  EXPECT_TRUE(m.visible_indices_ambiguous);

  // UUIDs (and unique prefixes) are unambiguous.
  m = map_cuda(gpus, std::nullopt, std::string("GPU-1002-aaaa,GPU-1000"), {});
  EXPECT_EQ(nvml_of(m), (std::vector<unsigned>{2, 0}));
  EXPECT_FALSE(m.visible_indices_ambiguous);
  EXPECT_EQ(m.order, "FASTEST_FIRST");
  EXPECT_TRUE(m.certain);  // one model: fastest first is bus order
}

TEST(CudaOrder, TheListEndsAtTheFirstEntryThatNamesNothing) {
  const std::vector<device_info> gpus = {gpu(0, "00000000:18:00.0"), gpu(1, "00000000:3B:00.0")};
  const auto m = map_cuda(gpus, std::nullopt, std::string("1,7,0"), {});
  EXPECT_EQ(nvml_of(m), (std::vector<unsigned>{1}));
  ASSERT_EQ(m.notes.size(), 1U);
  EXPECT_NE(m.notes[0].find("'7'"), std::string::npos);
  EXPECT_TRUE(map_cuda(gpus, std::nullopt, std::string(""), {}).devices.empty());
}

TEST(CudaOrder, MigInstancesMapToTheirGpu) {
  const std::vector<device_info> gpus = {gpu(0, "00000000:18:00.0"), gpu(1, "00000000:3B:00.0")};
  const mig_parent_fn parent = [](std::string_view mig) -> std::optional<std::string> {
    if (mig == "MIG-abc") return "GPU-1001-aaaa";
    return std::nullopt;
  };
  const auto m = map_cuda(gpus, std::nullopt, std::string("MIG-abc,MIG-GPU-1000-aaaa/1/0"), parent);
  EXPECT_EQ(nvml_of(m), (std::vector<unsigned>{1, 0}));
}

TEST(CudaOrder, MixedModelsMakeFastestFirstUncertain) {
  const std::vector<device_info> gpus = {gpu(0, "00000000:18:00.0", "NVIDIA A100-SXM4-80GB"),
                                         gpu(1, "00000000:3B:00.0")};
  EXPECT_FALSE(map_cuda(gpus, std::nullopt, std::nullopt, {}).certain);
  EXPECT_TRUE(map_cuda(gpus, std::string("PCI_BUS_ID"), std::nullopt, {}).certain);
}

report healthy_report() {
  report r;
  r.hostname = "node7";
  r.time = "2026-01-01T00:00:00.000000Z";
  r.backend_ok = true;
  r.meta.backend = "nvml";
  r.meta.driver_version = "570.86.15";
  gpu_report g;
  g.info = gpu(0, "00000000:18:00.0");
  g.reading.power = watts{350};
  g.caps.gpm = true;
  g.caps.power_limit_control = true;
  g.caps.power_limit_permission = true;
  g.caps.health_readings = {"utilization", "gpm"};
  health_reading h;
  h.persistence_mode = true;
  g.health = h;
  g.cuda_index = 0;
  r.gpus.push_back(g);
  r.cuda.devices.push_back({0, 0, 0, g.info.uuid});
  return r;
}

bool has(const report& r, const std::string& code) {
  for (const auto& f : r.findings) {
    if (f.code == code) return true;
  }
  return false;
}

TEST(DoctorReport, HealthyMachineExitsZero) {
  report r = healthy_report();
  conclude(r);
  EXPECT_EQ(r.exit_status, health::kHealthy);
  EXPECT_TRUE(r.findings.empty());
  const std::string text = render_text(r, false);
  EXPECT_NE(text.find("Status: healthy (exit 0)"), std::string::npos) << text;
  EXPECT_NE(text.find("cuda:0 = GPU 0"), std::string::npos) << text;
  EXPECT_NE(text.find("this process may change it: yes"), std::string::npos) << text;
  EXPECT_EQ(text.find("CPU and DRAM"), std::string::npos);  // no RAPL section without RAPL
}

TEST(DoctorReport, MeasurementFindings) {
  report r = healthy_report();
  r.gpus[0].info.has_energy_counter = false;
  r.gpus[0].info.architecture = "hopper";
  r.gpus[0].caps.gpm = false;
  r.gpus[0].caps.power_limit_permission = false;
  conclude(r);
  EXPECT_TRUE(has(r, "no_energy_counter"));
  EXPECT_TRUE(has(r, "gpm_unavailable"));
  EXPECT_TRUE(has(r, "power_limit_no_permission"));
  // What cannot be measured here is information, unless --fail-on names it.
  EXPECT_EQ(r.exit_status, health::kHealthy);
  r.policy.fail_on = {"no_energy_counter"};
  conclude(r);
  EXPECT_EQ(r.exit_status, health::kUnhealthy);
  EXPECT_EQ(r.findings[0].code, "no_energy_counter");
  r.policy.ignore = {"no_energy_counter"};
  conclude(r);
  EXPECT_EQ(r.exit_status, health::kHealthy);
  EXPECT_FALSE(has(r, "no_energy_counter"));
  ASSERT_EQ(r.ignored.size(), 1U);
  EXPECT_EQ(r.ignored[0].code, "no_energy_counter");

  r = healthy_report();
  r.gpus[0].info.power = power_source::none;
  r.gpus[0].info.has_energy_counter = false;
  conclude(r);
  EXPECT_TRUE(has(r, "not_measurable"));
}

TEST(DoctorReport, MostSevereFirstAndHealthIncluded) {
  report r = healthy_report();
  r.gpus[0].health->persistence_mode = false;
  r.gpus[0].health->remap_failure = true;
  conclude(r);
  ASSERT_GE(r.findings.size(), 2U);
  EXPECT_EQ(r.findings[0].code, "remap_failure");
  EXPECT_EQ(r.findings[0].level, health::severity::critical);
  EXPECT_EQ(r.exit_status, health::kUnhealthy);
}

TEST(DoctorReport, NoBackendIsUnhealthy) {
  report r;
  r.backend_error = "cannot load the NVIDIA management library libnvidia-ml.so.1";
  conclude(r);
  EXPECT_EQ(r.exit_status, health::kUnhealthy);
  EXPECT_TRUE(has(r, "backend_unavailable"));
  const auto j = nlohmann::json::parse(render_json(r));
  EXPECT_EQ(j["status"], "unhealthy");
  EXPECT_EQ(j["backend"]["ok"], false);
  EXPECT_EQ(j["findings"][0]["code"], "backend_unavailable");
  EXPECT_TRUE(j["findings"][0]["gpu"].is_null());
}

TEST(DoctorReport, RaplSectionAndItsFix) {
  report r = healthy_report();
  component_status cpu;
  cpu.kind = device_kind::cpu;
  cpu.detail = "energy_uj is readable by root only";
  cpu.fix = "sudo chmod a+r /sys/class/powercap/intel-rapl:*/energy_uj";
  r.components.push_back(cpu);
  component_status dram;
  dram.kind = device_kind::dram;
  dram.method = energy_method::counter;
  dram.detail = "dram";
  r.components.push_back(dram);
  conclude(r);
  EXPECT_TRUE(has(r, "cpu_not_measured"));
  EXPECT_FALSE(has(r, "dram_not_measured"));
  EXPECT_EQ(r.exit_status, health::kHealthy);  // a capability gap: information, with its fix
  const std::string text = render_text(r, false);
  EXPECT_NE(text.find("CPU and DRAM (RAPL)"), std::string::npos);
  EXPECT_NE(text.find("fix: sudo chmod a+r"), std::string::npos) << text;
}

TEST(DoctorReport, CudaFindings) {
  report r = healthy_report();
  r.gpus.push_back(r.gpus[0]);
  r.cuda.certain = false;
  r.cuda.visible_indices_ambiguous = true;
  conclude(r);
  EXPECT_TRUE(has(r, "cuda_order_uncertain"));
  EXPECT_TRUE(has(r, "cuda_visible_indices"));
}

TEST(DoctorReport, JsonHasEverySection) {
  report r = healthy_report();
  r.gpus[0].health->persistence_mode = false;
  conclude(r);
  const std::string line = render_json(r);
  ASSERT_EQ(line.find('\n'), line.size() - 1);
  const auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["type"], "doctor");
  EXPECT_EQ(j["exit_status"], 1);
  EXPECT_EQ(j["status"], "warnings");
  EXPECT_EQ(j["backend"]["driver_version"], "570.86.15");
  EXPECT_EQ(j["gpus"][0]["gpm"], true);
  EXPECT_EQ(j["gpus"][0]["power_w"], 350.0);
  EXPECT_EQ(j["gpus"][0]["cuda_index"], 0);
  EXPECT_EQ(j["cuda"]["devices"][0]["nvml_index"], 0);
  EXPECT_EQ(j["findings"][0]["code"], "persistence_off");
  EXPECT_EQ(j["findings"][0]["gpu"], 0);
  EXPECT_FALSE(j["findings"][0]["fix"].get<std::string>().empty());
}

TEST(DoctorReport, SlowDriverAndUncheckedGpus) {
  report r = healthy_report();
  r.gpus[0].read_s = 0.0002;
  r.gpus.push_back(r.gpus[0]);
  r.gpus[1].info = gpu(1, "00000000:19:00.0");
  r.gpus[1].read_s = 0.2;
  r.gpus[1].health.reset();
  r.gpus[1].caps = {};
  r.gpus[1].not_checked = "the driver is too slow";
  r.gpus.push_back(r.gpus[0]);
  r.gpus[2].info = gpu(2, "00000000:1A:00.0");
  r.gpus[2].health.reset();
  r.gpus[2].not_checked = "doctor had spent its 2 s on the GPUs before it";
  conclude(r);
  EXPECT_EQ(r.exit_status, health::kWarnings);
  ASSERT_EQ(r.findings.size(), 2U);
  EXPECT_EQ(r.findings[0].code, "slow_driver");
  EXPECT_EQ(r.findings[0].gpu, 1U);
  EXPECT_NE(r.findings[0].message.find("took 200 ms"), std::string::npos);
  EXPECT_EQ(r.findings[1].code, "not_checked");
  EXPECT_EQ(r.findings[1].gpu, 2U);
  const std::string text = render_text(r, false);
  EXPECT_NE(text.find("read in 0.20 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("health      not checked: the driver is too slow"), std::string::npos)
      << text;
  const auto j = nlohmann::json::parse(render_json(r));
  EXPECT_EQ(j["gpus"][1]["read_time_s"], 0.2);
  EXPECT_EQ(j["gpus"][1]["health_checked"], false);
  EXPECT_EQ(j["gpus"][0]["health_checked"], true);
}

TEST(DoctorReport, EnergyLineSaysHowOnce) {
  report r = healthy_report();
  conclude(r);
  std::string text = render_text(r, false);
  EXPECT_NE(text.find("energy      from its energy counter · power instantaneous"),
            std::string::npos)
      << text;
  r.gpus[0].info.has_energy_counter = false;
  conclude(r);
  text = render_text(r, false);
  EXPECT_NE(text.find("energy      integrated from power readings (no energy counter)"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("tune"), std::string::npos) << text;  // there is no joules tune
}

TEST(DoctorReport, RaplZonesLeftOutAreShown) {
  report r = healthy_report();
  component_status cpu;
  cpu.kind = device_kind::cpu;
  cpu.method = energy_method::counter;
  cpu.detail = "RAPL intel-rapl:0 package-0";
  cpu.left_out = {
      "intel-rapl:1 (psys): the whole platform, which contains the packages: not "
      "added to them",
      "intel-rapl:0:0 (core): part of package intel-rapl:0"};
  r.components.push_back(cpu);
  conclude(r);
  const std::string text = render_text(r, false);
  EXPECT_NE(text.find("left out  intel-rapl:1 (psys): the whole platform"), std::string::npos)
      << text;
  EXPECT_NE(text.find("left out  intel-rapl:0:0 (core): part of package"), std::string::npos);
  const auto j = nlohmann::json::parse(render_json(r));
  EXPECT_EQ(j["components"][0]["left_out"].size(), 2U);
}

}  // namespace
}  // namespace joules::doctor
