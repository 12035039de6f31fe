#include "backend/backend.hpp"

#include <fmt/format.h>

#include "backend/composite_backend.hpp"
#include "backend/nvml_backend.hpp"
#include "backend/sim_backend.hpp"
#include "rapl/cpu_backend.hpp"
#include "util/error.hpp"

namespace joules {

std::string_view to_string(energy_method m) {
  switch (m) {
    case energy_method::counter:
      return "counter";
    case energy_method::polled:
      return "polled";
    case energy_method::simulated:
      return "simulated";
    case energy_method::estimated:
      return "estimated";
    case energy_method::none:
      return "none";
  }
  return "none";
}

std::string_view to_string(power_source s) {
  switch (s) {
    case power_source::none:
      return "none";
    case power_source::field_instant:
      return "instant";
    case power_source::power_usage:
      return "power_usage";
    case power_source::model:
      return "model";
  }
  return "none";
}

std::string_view to_string(device_kind k) {
  switch (k) {
    case device_kind::gpu:
      return "gpu";
    case device_kind::cpu:
      return "cpu";
    case device_kind::dram:
      return "dram";
  }
  return "gpu";
}

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
      throw fatal_error(
          "NVML found no GPU that joules may use; to try joules without a GPU, or to estimate on "
          "GPUs without power readings, use --backend sim");
    }
    return b;
  }
  throw usage_error(fmt::format("--backend '{}': expected auto, nvml or sim", options.name));
}

}  // namespace joules
