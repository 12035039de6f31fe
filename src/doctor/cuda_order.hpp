#pragma once
// Which CUDA device is which NVML GPU.  nvidia-smi, NVML and joules number GPUs by NVML index;
// a CUDA program (torch's cuda:0) numbers the GPUs it may see, in CUDA's order:
//   - CUDA_DEVICE_ORDER=PCI_BUS_ID: by PCI bus id;
//   - FASTEST_FIRST (the default): the fastest first, ties by PCI bus id; on a node of one GPU
//     model that is the PCI bus order too;
// then CUDA_VISIBLE_DEVICES keeps the listed devices, in the order listed (indices count in
// CUDA's order, UUIDs and MIG instances name a device; the list ends at the first entry that
// names none), and numbers them from 0.
// Pure logic: the environment and MIG lookups are passed in.

#include <optional>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "devices/device_scope.hpp"

namespace joules::doctor {

struct cuda_entry {
  unsigned cuda_index = 0;
  std::size_t device = 0;  // index into the device list given
  unsigned nvml_index = 0;
  std::string uuid;
};

struct cuda_mapping {
  std::string order;                   // "PCI_BUS_ID" or "FASTEST_FIRST"
  bool order_from_env = false;         // CUDA_DEVICE_ORDER was set
  std::optional<std::string> visible;  // CUDA_VISIBLE_DEVICES, when set
  std::vector<cuda_entry> devices;     // what CUDA numbers, in CUDA's order
  // False when CUDA's fastest-first order cannot be known here (GPUs of different models):
  // the mapping then assumes PCI bus order.
  bool certain = true;
  // CUDA_VISIBLE_DEVICES counts by index in CUDA's order, joules (and nvidia-smi) by NVML's:
  // true when the two orders differ and indices are used.
  bool visible_indices_ambiguous = false;
  std::vector<std::string> notes;  // entries that named no device
};

cuda_mapping map_cuda(const std::vector<device_info>& gpus,
                      const std::optional<std::string>& device_order,
                      const std::optional<std::string>& visible_devices,
                      const mig_parent_fn& mig_parent);

}  // namespace joules::doctor
