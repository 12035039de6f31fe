#pragma once
// Opening the backends a measurement reads: the GPUs of every vendor library present (NVML,
// AMD SMI or ROCm SMI, Level Zero, HLML) or of the one named, or the simulated ones, and the CPU
// and DRAM domains of RAPL, as one device list, GPUs first.  The only place that knows every
// backend; the rest of joules sees the `backend` interface.

#include <memory>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "backends/sim/sim_backend.hpp"

namespace joules {

struct backend_options {
  std::string name = "auto";  // auto | nvml | amdsmi | levelzero | hlml | sim
  std::string nvml_library;   // empty: JOULES_NVML_LIBRARY or libnvidia-ml.so.1
  // empty: JOULES_AMDSMI_LIBRARY or libamd_smi.so, then ROCm SMI (JOULES_ROCM_SMI_LIBRARY or
  // librocm_smi64.so); docs/amd-notes.md §1.
  std::string amdsmi_library;
  std::string rocm_smi_library;    // set: that ROCm SMI only, not AMD SMI (a restore's)
  std::string level_zero_library;  // empty: JOULES_LEVEL_ZERO_LIBRARY or libze_loader.so.1
  std::string hlml_library;        // empty: JOULES_HLML_LIBRARY or libhlml.so
  sim_options sim;
  component_options components;
};

// The GPU backends named in `options`, without CPU and DRAM.  "auto" opens every vendor library
// present and keeps those that have a GPU, in the order NVML, AMD, Level Zero, HLML; it never falls
// back to the sim backend silently: with no GPU at all it fails with a message that says why for
// each vendor and mentions --backend sim.  A named vendor with no GPU fails likewise.  Throws
// fatal_error (usage_error for an unknown name).
std::vector<std::unique_ptr<backend>> open_gpu_backends(const backend_options& options);

// The GPUs (unless components.gpu is false), then the RAPL domains of the CPU packages and their
// DRAM that can be read (src/backends/rapl), then a CPU estimate when asked for: one device list
// with device_info::kind telling them apart.  GPUs always come first.  Throws fatal_error.
std::unique_ptr<backend> open_backend(const backend_options& options);

}  // namespace joules
