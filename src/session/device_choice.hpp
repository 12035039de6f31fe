#pragma once
// Which of the opened devices a session reads: the GPUs this job may use (--gpus, else
// CUDA_VISIBLE_DEVICES, else NVIDIA_VISIBLE_DEVICES, else all: devices/device_scope.hpp) and
// every CPU package and DRAM domain, which are the machine's, not the job's.  run, wrap,
// monitor, serve and doctor all choose this way.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "devices/device_scope.hpp"
#include "sampler/sampler.hpp"

namespace joules::session {

// The pace at which GPUs without an energy counter are read by default (their power sensor's
// update period on Pascal: docs/nvml-notes.md §3.3), in run, wrap and the library's monitor.
inline constexpr std::chrono::milliseconds kPolledInterval{20};

struct device_choice {
  // Indices into the sampler's devices: the chosen GPUs, then the CPU and DRAM domains.
  std::vector<std::size_t> devices;
  scope_result scope;  // how the GPUs were chosen (devices are indices into `gpus`)
  // Every GPU the backend lists and its index among the sampler's devices.
  std::vector<device_info> gpus;
  std::vector<std::size_t> gpu_index;
};

// Asks the driver about MIG instances on the sampler's thread when CUDA_VISIBLE_DEVICES names
// one.  Throws usage_error for a --gpus value that names no GPU.
device_choice choose_devices(sampler& s, const std::optional<std::string>& gpus);

// For CUDA_VISIBLE_DEVICES entries naming a MIG instance: its GPU, asked on the sampler thread.
mig_parent_fn mig_parents_of(sampler& s);

}  // namespace joules::session
