#pragma once
// Which devices a run measures, each keyed by its UUID: by default the devices this job may use,
// never silently the whole host.
//
//   1. --gpus all | LIST, where LIST names devices by NVML index (as nvidia-smi numbers them),
//      UUID (GPU-..., or a unique prefix of one), MIG UUID (its parent GPU), or PCI bus id;
//   2. else CUDA_VISIBLE_DEVICES: indices, GPU UUIDs (full or abbreviated), MIG-<uuid> and
//      MIG-GPU-<uuid>/<gi>/<ci> entries mapped to their parent GPU; like CUDA, the list ends at
//      the first entry that names no device;
//   3. else NVIDIA_VISIBLE_DEVICES (container runtimes): all, none/void, indices or UUIDs;
//   4. else every device.
// Pure logic: the environment is passed in.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.hpp"

namespace joules {

struct scope_request {
  std::optional<std::string> gpus;  // --gpus, when given
  std::optional<std::string> cuda_visible_devices;
  std::optional<std::string> nvidia_visible_devices;
};

// The request of this job: `gpus` (--gpus) and the job's environment as it is
// (CUDA_VISIBLE_DEVICES set but empty means no GPU).
scope_request job_scope_request(std::optional<std::string> gpus);

struct scope_result {
  std::vector<std::size_t> devices;  // indices into the backend's device list, in list order
  std::string source;                // "--gpus", "CUDA_VISIBLE_DEVICES", ..., "all devices"
  std::string value;                 // the text the choice came from
  std::vector<std::string> notes;    // things worth telling the user (ignored entries...)
};

// Maps a MIG UUID to the UUID of its parent GPU (backend::parent_of_mig).
using mig_parent_fn = std::function<std::optional<std::string>(std::string_view)>;

// Throws usage_error for a --gpus value that names no device, names one twice, or is malformed,
// and for a job that may use no GPU at all.
scope_result select_devices(const std::vector<device_info>& devices, const scope_request& request,
                            const mig_parent_fn& mig_parent);

}  // namespace joules
