#pragma once
// The pieces device_scope.cpp and vendor_scope.cpp share: parsing of index and PCI tokens, and
// the resolver that says which device a token names.  Internal to src/devices.

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "devices/device_scope.hpp"

namespace joules::scope {

std::optional<unsigned> parse_index(std::string_view s);
// "0000:18:00.0" and "00000000:18:00.0" name the same device: compare numerically.
std::optional<std::array<unsigned long, 4>> parse_pci(std::string_view s);
std::string lower(std::string_view s);

// Which vendor's variables apply to a device: "amd", "intel", else NVIDIA's (the sim backend's
// GPUs and devices of no vendor included).
enum class family { nvidia, amd, intel };
family family_of(const device_info& d);

// One vendor's GPUs, as indices into the whole device list.
std::vector<std::size_t> members(const std::vector<device_info>& devices, family f);

struct resolver {
  const std::vector<device_info>& devices;
  const mig_parent_fn& mig_parent;

  // A UUID (any case, with or without the GPU- that ROCr puts before AMD's), an alias, or a
  // unique prefix of at least 8 characters of one, among `among` (every device when empty).
  std::optional<std::size_t> by_uuid(std::string_view uuid,
                                     const std::vector<std::size_t>& among = {}) const;
  // The device with this index or partition index, among `among`.
  std::optional<std::size_t> by_index(unsigned n, const std::vector<std::size_t>& among) const;
  // The device a --gpus or CUDA_VISIBLE_DEVICES token names among `among`, or nullopt.
  std::optional<std::size_t> resolve(std::string_view token,
                                     const std::vector<std::size_t>& among) const;
};

// A vendor's part of the choice: its devices (indices into the whole list), where they came
// from, and why none is left when that is so.
struct part {
  std::vector<std::size_t> devices;
  std::string source = "all devices";
  std::string value;
  std::vector<std::string> notes;
  std::string none_left;  // the usage error to raise when no vendor leaves any device
};

part amd_part(const resolver& r, const std::vector<std::size_t>& amd, const scope_request& q,
              bool node_has_nvidia);
part intel_part(const resolver& r, const std::vector<std::size_t>& intel, const scope_request& q);

}  // namespace joules::scope
