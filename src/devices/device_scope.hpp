#pragma once
// Which devices a run measures, each keyed by its UUID: by default the devices this job may use,
// never silently the whole host.
//
//   1. --gpus all | LIST, where LIST names devices by index (as nvidia-smi, amd-smi or xpu-smi
//      number them; VENDOR:INDEX such as amd:0 on a node of several vendors), UUID (or a unique
//      prefix of one of at least 8 characters), MIG UUID (its parent GPU), or PCI bus id;
//   2. else, for each vendor's GPUs, the variables its runtime reads:
//      - NVIDIA: CUDA_VISIBLE_DEVICES (indices, GPU UUIDs, full or abbreviated, MIG-<uuid> and
//        MIG-GPU-<uuid>/<gi>/<ci> entries mapped to their parent GPU; like CUDA, the list ends at
//        the first entry that names no device), else NVIDIA_VISIBLE_DEVICES (container runtimes:
//        all, none/void, indices or UUIDs);
//      - AMD: ROCR_VISIBLE_DEVICES (indices or UUIDs), then HIP_VISIBLE_DEVICES, or
//        CUDA_VISIBLE_DEVICES on a node without NVIDIA GPUs (HIP reads either), as indices into
//        what ROCR_VISIBLE_DEVICES left; indices count compute partitions, each mapped to its
//        GPU (docs/amd-notes.md §6);
//      - Intel: ZE_AFFINITY_MASK (N or N.M), N counting stacks under the FLAT device hierarchy
//        (ZE_FLAT_DEVICE_HIERARCHY, FLAT by default) and cards under COMPOSITE or COMBINED, each
//        stack mapped to its card (docs/level-zero-notes.md §6);
//      each vendor's GPUs without such a variable: all of them.
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
  std::optional<std::string> rocr_visible_devices;
  std::optional<std::string> hip_visible_devices;
  std::optional<std::string> ze_affinity_mask;
  std::optional<std::string> ze_flat_device_hierarchy;
};

// The request of this job: `gpus` (--gpus) and the job's environment as it is
// (CUDA_VISIBLE_DEVICES set but empty means no GPU).
scope_request job_scope_request(std::optional<std::string> gpus);

// A MIG instance that --gpus or CUDA_VISIBLE_DEVICES named: its GPU is measured whole (power and
// energy are the GPU's, shared by every instance on it; docs/nvml-notes.md §9.3).
struct mig_choice {
  std::size_t device = 0;  // index into the backend's device list: the parent GPU
  std::string gpu;         // the parent GPU's key (device_info::key(): its UUID)
  std::string mig;         // the entry as given: MIG-<uuid> or MIG-GPU-<uuid>/<gi>/<ci>
};

struct scope_result {
  std::vector<std::size_t> devices;  // indices into the backend's device list, in list order
  // "--gpus", "CUDA_VISIBLE_DEVICES", ..., "all devices"; the sources of several vendors are
  // joined with ", " (each vendor's GPUs go by their own variables).
  std::string source;
  std::string value;               // the text the choice came from (NAME=value for several)
  std::vector<std::string> notes;  // things worth telling the user (ignored entries...)
  std::vector<mig_choice> mig;     // the MIG instances named, each with its GPU
};

// Maps a MIG UUID to the UUID of its parent GPU (backend::parent_of_mig).
using mig_parent_fn = std::function<std::optional<std::string>(std::string_view)>;

// Throws usage_error for a --gpus value that names no device, names one twice, or is malformed,
// and for a job that may use no GPU at all.
scope_result select_devices(const std::vector<device_info>& devices, const scope_request& request,
                            const mig_parent_fn& mig_parent);

}  // namespace joules
