#include "backends/composite/open_backend.hpp"

#include <fmt/format.h>

#include "backends/composite/composite_backend.hpp"
#include "backends/nvml/nvml_backend.hpp"
#include "backends/rapl/cpu_backend.hpp"
#include "util/error.hpp"

namespace joules {

std::unique_ptr<backend> open_backend(const backend_options& options) {
  const component_options& c = options.components;
  std::unique_ptr<backend> gpus;
  if (c.gpu) gpus = open_gpu_backend(options);
  if (!c.cpu && !c.dram) return gpus;
  auto cpus = std::make_unique<rapl::cpu_backend>(c);
  if (!gpus && cpus->devices().empty()) {
    throw fatal_error("--components names no component that can be measured on this machine");
  }
  return std::make_unique<composite_backend>(std::move(gpus), std::move(cpus));
}

std::unique_ptr<backend> open_gpu_backend(const backend_options& options) {
  if (options.name == "sim") return open_sim_backend(options.sim);
  if (options.name == "nvml" || options.name == "auto") {
    auto b = open_nvml_backend(options.nvml_library);
    if (b->devices().empty()) {
      throw no_device_error(
          "NVML found no GPU that joules may use; to try joules without a GPU, or to estimate on "
          "GPUs without power readings, use --backend sim");
    }
    return b;
  }
  throw usage_error(fmt::format("--backend '{}': expected auto, nvml or sim", options.name));
}

}  // namespace joules
