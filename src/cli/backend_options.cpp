// --backend, --nvml-library, --amdsmi-library, --level-zero-library, --hlml-library, --sim-*,
// --gpus,
// --components, --estimate-cpu, --cpu-tdp.

#include <fmt/format.h>

#include "backends/sim/sim_backend.hpp"
#include "cli/shared_options.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

namespace joules::cli {
namespace {

constexpr std::string_view kMeasurement = "Measurement";
constexpr std::string_view kSim = "Simulated GPUs (--backend sim)";
constexpr std::string_view kComponents = "CPU and DRAM (RAPL)";

}  // namespace

void declare_backend(options::option_table& t, backend_options& out) {
  t.group(kMeasurement);
  t.choice("backend", "NAME",
           "Where readings come from: auto (every GPU library present: NVML, AMD SMI or ROCm "
           "SMI, Level Zero, HLML; fails with a clear message when none has a GPU), nvml, amdsmi, "
           "levelzero, hlml (Intel Gaudi), or sim (simulated GPUs, a documented model for trying "
           "joules without a "
           "GPU).",
           "auto", {"auto", "nvml", "amdsmi", "levelzero", "hlml", "sim"}, out.name);
  t.text("nvml-library", 0, "PATH", "The NVML library to load.",
         "JOULES_NVML_LIBRARY, else libnvidia-ml.so.1 from the loader's search path",
         [&out](const std::string& v) { out.nvml_library = v; });
  t.text("amdsmi-library", 0, "PATH", "The AMD SMI library to load.",
         "JOULES_AMDSMI_LIBRARY, else libamd_smi.so (then ROCm SMI's librocm_smi64.so, or "
         "JOULES_ROCM_SMI_LIBRARY) from the loader's search path or /opt/rocm/lib",
         [&out](const std::string& v) { out.amdsmi_library = v; });
  t.text("level-zero-library", 0, "PATH", "The Level Zero loader to load.",
         "JOULES_LEVEL_ZERO_LIBRARY, else libze_loader.so.1 from the loader's search path",
         [&out](const std::string& v) { out.level_zero_library = v; });
  t.text("hlml-library", 0, "PATH", "The HLML library (Intel Gaudi) to load.",
         "JOULES_HLML_LIBRARY, else libhlml.so from the loader's search path or "
         "/usr/lib/habanalabs",
         [&out](const std::string& v) { out.hlml_library = v; });
}

void declare_sim(options::option_table& t, backend_options& out) {
  CLI::Option* backend = t.app().get_option("--backend");
  t.group(kSim);
  std::vector<CLI::Option*> sim;
  sim.push_back(t.text("sim-model", 0, "NAME",
                       "Simulated GPU model: h100-sxm, h100-pcie, h200, gh200, b200, a100-sxm, "
                       "a100-pcie, a10, l40s, l4, rtx4090, v100, t4; any other name with "
                       "--sim-tdp.",
                       "h100-sxm", [&out](const std::string& v) { out.sim.model = v; }));
  sim.push_back(t.count("sim-gpus", "N", "Number of simulated GPUs.", "8", 1, 1024,
                        "a number of GPUs",
                        [&out](std::uint64_t n) { out.sim.gpus = static_cast<unsigned>(n); }));
  sim.push_back(t.text("sim-profile", 0, "PROFILE",
                       "Utilisation over time: train (start-up, then compute and communication "
                       "phases), idle, or a constant utilisation between 0 and 1.",
                       "train", [&out](const std::string& v) {
                         [[maybe_unused]] const sim_profile check(v);  // usage_error when bad
                         out.sim.profile = v;
                       }));
  sim.push_back(t.number("sim-tdp", "W", "Board power of the simulated GPU in watts.",
                         "the model's", 1.0, 5000.0, "watts from 1 to 5000",
                         [&out](double w, const std::string&) { out.sim.tdp_w = w; }));
  for (CLI::Option* o : sim) {
    // Rules run before values are stored: --backend is read as it was given.
    t.rule(o, "Only with --backend sim.", [o, backend] {
      if (o->count() == 0) return;
      if (backend->count() == 0 || backend->results().back() != "sim")
        throw usage_error(
            fmt::format("{} applies only with --backend sim", options::option_name(o)));
    });
  }
}

void declare_gpus(options::option_table& t, std::optional<std::string>& out) {
  t.group(kMeasurement);
  t.text("gpus", 0, "LIST",
         "GPUs to measure: all, or a comma-separated list of indices (as nvidia-smi, amd-smi "
         "or xpu-smi number them; VENDOR:INDEX such as amd:0 on a node of several vendors), "
         "UUIDs, MIG UUIDs or AMD partitions (their GPU is measured) or PCI bus ids.",
         "the GPUs this job may use: CUDA_VISIBLE_DEVICES, else NVIDIA_VISIBLE_DEVICES, for "
         "NVIDIA's; ROCR_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES for AMD's; ZE_AFFINITY_MASK for "
         "Intel's; else all",
         [&out](const std::string& v) {
           if (trim(v).empty()) {
             throw usage_error(
                 "--gpus '': expected all, or a comma-separated list of GPU indices or UUIDs");
           }
           out = v;
         });
}

void declare_components(options::option_table& t, component_options& out,
                        std::string_view components_default) {
  t.group(kComponents);
  t.text("components", 0, "LIST",
         "What to measure: a comma-separated list of gpu, cpu (RAPL package domains) and dram "
         "(RAPL DRAM domains). Named components that cannot be measured are an error, with the "
         "fix; JOULES_POWERCAP_ROOT points RAPL at another powercap tree.",
         components_default, [&out](const std::string& v) {
           out.named = true;
           out.gpu = out.cpu = out.dram = false;
           for (const auto& part : split(v, ',')) {
             const auto c = trim(part);
             if (c == "gpu") {
               out.gpu = true;
             } else if (c == "cpu") {
               out.cpu = true;
             } else if (c == "dram") {
               out.dram = true;
             } else {
               throw usage_error(fmt::format(
                   "--components '{}': expected a comma-separated list of gpu, cpu and dram", v));
             }
           }
         });
  CLI::Option* components = t.app().get_option("--components");
  CLI::Option* estimate =
      t.flag("estimate-cpu", 0,
             "Where RAPL cannot measure the CPU, estimate it as TDP x (0.1 + 0.9 x utilisation), "
             "labelled estimated, with the TDP of the CPU model from joules' table (or "
             "--cpu-tdp).",
             out.estimate_cpu);
  t.rule(estimate, "", [estimate, components] {
    if (estimate->count() == 0 || components->count() == 0) return;
    for (const auto& part : split(components->results().back(), ',')) {
      if (trim(part) == "cpu") return;
    }
    throw usage_error("--estimate-cpu: --components leaves out cpu");
  });
  CLI::Option* tdp =
      t.number("cpu-tdp", "W", "TDP of one CPU socket in watts for --estimate-cpu.",
               "the CPU model's, from data/cpu_tdp.csv", 1.0, 2000.0, "watts from 1 to 2000",
               [&out](double w, const std::string&) { out.cpu_tdp_w = w; });
  t.needs(tdp, estimate);
}

}  // namespace joules::cli
