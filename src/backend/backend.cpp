#include "backend/backend.hpp"

#include <fmt/format.h>

#include "backend/nvml_backend.hpp"
#include "backend/sim_backend.hpp"
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

std::unique_ptr<backend> open_backend(const backend_options& options) {
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
