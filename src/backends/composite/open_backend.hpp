#pragma once
// Opening the backends a measurement reads: the GPUs of one vendor library (or the simulated
// ones) and the CPU and DRAM domains of RAPL, as one device list, GPUs first.  The only place
// that knows every backend; the rest of joules sees the `backend` interface.

#include <memory>
#include <string>

#include "backends/backend.hpp"
#include "backends/sim/sim_backend.hpp"

namespace joules {

struct backend_options {
  std::string name = "auto";  // auto | nvml | sim
  std::string nvml_library;   // empty: JOULES_NVML_LIBRARY or libnvidia-ml.so.1
  sim_options sim;
  component_options components;
};

// Opens the backend named in `options`.  "auto" means NVML: joules never falls back to the sim
// backend silently, it fails with a message that mentions --backend sim.  Throws fatal_error.
// The GPU backend alone, without CPU and DRAM.
std::unique_ptr<backend> open_gpu_backend(const backend_options& options);

// The GPUs (unless components.gpu is false), then the RAPL domains of the CPU packages and their
// DRAM that can be read (src/backends/rapl), then a CPU estimate when asked for: one device list
// with device_info::kind telling them apart.  GPUs always come first.  Throws fatal_error.
std::unique_ptr<backend> open_backend(const backend_options& options);

}  // namespace joules
