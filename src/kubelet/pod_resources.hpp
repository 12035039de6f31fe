#pragma once
// The kubelet's pod-resources API (docs/kubernetes.md, "Pods on the series"): which pod and
// container holds which device.  The reply of PodResourcesLister/List is a protobuf message,
// decoded here by hand from the few fields joules reads; every other field is skipped.  The
// reply comes from outside: every length is checked against what is left, nesting is bounded,
// and a reply over the limits below is refused whole, with a message.
//
// Thread-safety: pure functions; a device_pods is immutable once built.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace joules::kubelet {

// One device the kubelet assigned to one container, as the reply names them.
struct device_assignment {
  std::string pod;
  std::string pod_namespace;
  std::string container;
  std::string resource;   // e.g. nvidia.com/gpu, nvidia.com/mig-1g.5gb
  std::string device_id;  // e.g. GPU-…, MIG-…, GPU-…::1 (time-sliced)
};

// Bounds on a reply (a node runs at most a few hundred pods, each with few devices).
inline constexpr std::size_t kMaxReplyBytes = 16u << 20;
inline constexpr std::size_t kMaxAssignments = 65536;
inline constexpr std::size_t kMaxStringBytes = 4096;

struct list_reply {
  std::vector<device_assignment> devices;
  std::string error;  // empty when the message decoded
};

// Decodes a ListPodResourcesResponse message (the protobuf bytes, without gRPC's 5-byte prefix).
list_reply decode_list_response(std::string_view message);

// Unwraps one gRPC length-prefixed message (docs/kubernetes.md): a flag byte that must be 0 (not
// compressed), a 4-byte big-endian length that must be exactly what follows.  nullopt when the
// bytes are not one such message.
std::optional<std::string_view> grpc_message(std::string_view body);

// The owner of a device: the labels joules puts on the device's series.
struct pod_ref {
  std::string pod;
  std::string pod_namespace;
  std::string container;
  bool operator==(const pod_ref&) const = default;
  auto operator<=>(const pod_ref&) const = default;
};

// Which containers hold each device, by the device's UUID (GPU-… or MIG-…).  Only NVIDIA's
// resources are read (nvidia.com/gpu and nvidia.com/mig-*, as dcgm-exporter does); a device id
// of a time-sliced GPU (GPU-…::N) counts for the GPU.
struct device_pods {
  std::map<std::string, std::vector<pod_ref>, std::less<>> by_uuid;
  // The containers holding `uuid`, sorted, each once; empty when none.
  const std::vector<pod_ref>& owners(std::string_view uuid) const;
};

// Whether joules reads assignments of `resource` (nvidia.com/gpu, nvidia.com/mig-*).
bool is_gpu_resource(std::string_view resource);

// The UUID a device id names: the id less a time-slicing suffix `::N`.
std::string_view device_uuid(std::string_view device_id);

device_pods pods_by_device(const std::vector<device_assignment>& devices);

}  // namespace joules::kubelet
