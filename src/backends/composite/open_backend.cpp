#include "backends/composite/open_backend.hpp"

#include <fmt/format.h>

#include "backends/amdsmi/amd_backend.hpp"
#include "backends/composite/composite_backend.hpp"
#include "backends/hlml/hlml_backend.hpp"
#include "backends/levelzero/ze_backend.hpp"
#include "backends/nvml/nvml_backend.hpp"
#include "backends/rapl/cpu_backend.hpp"
#include "util/error.hpp"

namespace joules {
namespace {

constexpr const char* kSimHint = "try joules with --backend sim";

struct vendor {
  const char* backend;  // --backend's name
  const char* library;  // the library, as people know it
};
constexpr vendor kVendors[] = {
    {"nvml", "NVML"}, {"amdsmi", "AMD SMI"}, {"levelzero", "Level Zero"}, {"hlml", "HLML"}};

std::unique_ptr<backend> open_vendor(std::string_view name, const backend_options& o) {
  if (name == "nvml") return open_nvml_backend(o.nvml_library);
  if (name == "amdsmi") return open_amd_backend(o.amdsmi_library, o.rocm_smi_library);
  if (name == "hlml") return open_hlml_backend(o.hlml_library);
  return open_level_zero_backend(o.level_zero_library);
}

std::string no_gpu(const vendor& v) {
  return fmt::format("{} found no GPU that joules may use", v.library);
}

std::string with_sim_hint(const std::string& why) {
  return fmt::format(
      "{}; to try joules without a GPU, or to estimate on GPUs without power readings, use "
      "--backend sim",
      why);
}

}  // namespace

std::vector<std::unique_ptr<backend>> open_gpu_backends(const backend_options& options) {
  std::vector<std::unique_ptr<backend>> out;
  if (options.name == "sim") {
    out.push_back(open_sim_backend(options.sim));
    return out;
  }
  for (const vendor& v : kVendors) {
    if (options.name != v.backend) continue;
    auto b = open_vendor(v.backend, options);
    if (b->devices().empty()) throw no_device_error(with_sim_hint(no_gpu(v)));
    out.push_back(std::move(b));
    return out;
  }
  if (options.name != "auto") {
    throw usage_error(fmt::format(
        "--backend '{}': expected auto, nvml, amdsmi, levelzero, hlml or sim", options.name));
  }
  // Every library present, each on its own: a node of two vendors reads both, and a library
  // that is absent (most nodes have one vendor) costs one failed dlopen.
  std::vector<std::string> absent;  // short reasons of libraries not on this machine
  std::vector<std::string> failed;  // full messages of libraries that loaded and failed
  for (const vendor& v : kVendors) {
    try {
      auto b = open_vendor(v.backend, options);
      if (b->devices().empty()) {
        failed.push_back(no_gpu(v));
        continue;
      }
      out.push_back(std::move(b));
    } catch (const library_not_found& e) {
      absent.push_back(e.reason());
    } catch (const fatal_error& e) {
      failed.push_back(e.what());
    }
  }
  if (!out.empty()) return out;
  if (failed.size() == 1) {
    // One vendor's library (the usual node): its message as it would be on its own.
    const std::string& why = failed.front();
    throw no_device_error(why.find("--backend sim") != std::string::npos ? why
                                                                         : with_sim_hint(why));
  }
  if (!failed.empty()) {
    throw no_device_error(fmt::format("{}; {}", fmt::join(failed, "; "), kSimHint));
  }
  throw no_device_error(
      fmt::format("found no GPU library: {}; is a GPU driver installed? Set JOULES_NVML_LIBRARY, "
                  "JOULES_AMDSMI_LIBRARY, JOULES_LEVEL_ZERO_LIBRARY or JOULES_HLML_LIBRARY to its "
                  "library, or {}",
                  fmt::join(absent, "; "), kSimHint));
}

std::unique_ptr<backend> open_backend(const backend_options& options) {
  const component_options& c = options.components;
  std::vector<std::unique_ptr<backend>> gpus;
  if (c.gpu) gpus = open_gpu_backends(options);
  std::unique_ptr<backend> cpus;
  if (c.cpu || c.dram) {
    cpus = std::make_unique<rapl::cpu_backend>(c);
    if (gpus.empty() && cpus->devices().empty()) {
      throw fatal_error("--components names no component that can be measured on this machine");
    }
  }
  if (gpus.size() == 1 && !cpus) return std::move(gpus.front());
  return std::make_unique<composite_backend>(std::move(gpus), std::move(cpus));
}

}  // namespace joules
