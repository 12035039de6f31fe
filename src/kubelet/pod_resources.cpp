#include "kubelet/pod_resources.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace joules::kubelet {
namespace {

// Field numbers of kubernetes/kubelet pkg/apis/podresources/v1/api.proto (docs/kubernetes.md).
constexpr std::uint32_t kResponsePodResources = 1;  // ListPodResourcesResponse.pod_resources
constexpr std::uint32_t kPodName = 1;               // PodResources.name
constexpr std::uint32_t kPodNamespace = 2;          // PodResources.namespace
constexpr std::uint32_t kPodContainers = 3;         // PodResources.containers
constexpr std::uint32_t kContainerName = 1;         // ContainerResources.name
constexpr std::uint32_t kContainerDevices = 2;      // ContainerResources.devices
constexpr std::uint32_t kDevicesResource = 1;       // ContainerDevices.resource_name
constexpr std::uint32_t kDevicesIds = 2;            // ContainerDevices.device_ids

// Protobuf wire types (protobuf.dev, "Encoding").
constexpr std::uint32_t kWireVarint = 0;
constexpr std::uint32_t kWireFixed64 = 1;
constexpr std::uint32_t kWireLength = 2;
constexpr std::uint32_t kWireFixed32 = 5;

// One protobuf message's bytes, read field by field.  Any error sticks: every later read fails.
class pod_wire_reader {
 public:
  explicit pod_wire_reader(std::string_view bytes) : rest_(bytes) {}

  bool done() const { return rest_.empty() || !error_.empty(); }
  const std::string& error() const { return error_; }

  // The next field's number and wire type; false at the end or on an error.
  bool next(std::uint32_t& field, std::uint32_t& wire) {
    if (done()) return false;
    const auto key = varint();
    if (!key) return false;
    if ((*key >> 3) == 0 || (*key >> 3) > 0x1fffffffu) return fail("a field number out of range");
    field = static_cast<std::uint32_t>(*key >> 3);
    wire = static_cast<std::uint32_t>(*key & 7u);
    return true;
  }

  // The bytes of a length-delimited field.
  std::optional<std::string_view> bytes() {
    const auto n = varint();
    if (!n) return std::nullopt;
    if (*n > rest_.size()) {
      fail("a length past the end of the message");
      return std::nullopt;
    }
    const std::string_view out = rest_.substr(0, static_cast<std::size_t>(*n));
    rest_.remove_prefix(static_cast<std::size_t>(*n));
    return out;
  }

  // A string field, at most kMaxStringBytes long.
  std::optional<std::string> text() {
    const auto b = bytes();
    if (!b) return std::nullopt;
    if (b->size() > kMaxStringBytes) {
      fail("a string longer than 4096 bytes");
      return std::nullopt;
    }
    return std::string(*b);
  }

  // Skips a field of a type joules does not read.
  bool skip(std::uint32_t wire) {
    switch (wire) {
      case kWireVarint:
        return varint().has_value();
      case kWireFixed64:
        return take(8);
      case kWireLength:
        return bytes().has_value();
      case kWireFixed32:
        return take(4);
      default:
        return fail("a wire type joules does not know (groups are not used by this API)");
    }
  }

  bool fail(std::string what) {
    if (error_.empty()) error_ = std::move(what);
    rest_ = {};
    return false;
  }

 private:
  std::optional<std::uint64_t> varint() {
    std::uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
      if (rest_.empty()) {
        fail("a number cut off at the end of the message");
        return std::nullopt;
      }
      const auto byte = static_cast<unsigned char>(rest_.front());
      rest_.remove_prefix(1);
      v |= static_cast<std::uint64_t>(byte & 0x7fu) << shift;
      if ((byte & 0x80u) == 0) return v;
    }
    fail("a number longer than 10 bytes");
    return std::nullopt;
  }

  bool take(std::size_t n) {
    if (rest_.size() < n) return fail("a fixed-size field cut off at the end of the message");
    rest_.remove_prefix(n);
    return true;
  }

  std::string_view rest_;
  std::string error_;
};

// A length-delimited field that must be a message (sub-reader) or a string.
bool expect_length(pod_wire_reader& r, std::uint32_t wire, const char* what) {
  if (wire == kWireLength) return true;
  return r.fail(std::string(what) + " is not length-delimited");
}

struct pod_container_devices {
  std::string resource;
  std::vector<std::string> ids;
};

bool read_devices(std::string_view bytes, pod_container_devices& out, std::string& error) {
  pod_wire_reader r(bytes);
  std::uint32_t f = 0;
  std::uint32_t w = 0;
  while (r.next(f, w)) {
    if (f == kDevicesResource || f == kDevicesIds) {
      if (!expect_length(r, w, "ContainerDevices' strings")) break;
      auto s = r.text();
      if (!s) break;
      if (f == kDevicesResource) {
        out.resource = std::move(*s);
      } else {
        if (out.ids.size() >= kMaxAssignments) {
          r.fail("more than 65536 device ids");
          break;
        }
        out.ids.push_back(std::move(*s));
      }
    } else if (!r.skip(w)) {
      break;
    }
  }
  error = r.error();
  return error.empty();
}

bool read_container(std::string_view bytes, const std::string& pod, const std::string& ns,
                    std::vector<device_assignment>& out, std::string& error) {
  pod_wire_reader r(bytes);
  std::string name;
  std::vector<pod_container_devices> devices;
  std::uint32_t f = 0;
  std::uint32_t w = 0;
  while (r.next(f, w)) {
    if (f == kContainerName) {
      if (!expect_length(r, w, "ContainerResources.name")) break;
      auto s = r.text();
      if (!s) break;
      name = std::move(*s);
    } else if (f == kContainerDevices) {
      if (!expect_length(r, w, "ContainerResources.devices")) break;
      const auto b = r.bytes();
      if (!b) break;
      pod_container_devices d;
      if (!read_devices(*b, d, error)) return false;
      devices.push_back(std::move(d));
    } else if (!r.skip(w)) {
      break;
    }
  }
  if (!r.error().empty()) {
    error = r.error();
    return false;
  }
  // Fields may come in any order: the name is known only at the end of the container.
  for (auto& d : devices) {
    for (auto& id : d.ids) {
      if (out.size() >= kMaxAssignments) {
        error = "more than 65536 device assignments";
        return false;
      }
      out.push_back({pod, ns, name, d.resource, std::move(id)});
    }
  }
  return true;
}

bool read_pod(std::string_view bytes, std::vector<device_assignment>& out, std::string& error) {
  pod_wire_reader r(bytes);
  std::string name;
  std::string ns;
  std::vector<std::string_view> containers;
  std::uint32_t f = 0;
  std::uint32_t w = 0;
  while (r.next(f, w)) {
    if (f == kPodName || f == kPodNamespace) {
      if (!expect_length(r, w, "PodResources' strings")) break;
      auto s = r.text();
      if (!s) break;
      (f == kPodName ? name : ns) = std::move(*s);
    } else if (f == kPodContainers) {
      if (!expect_length(r, w, "PodResources.containers")) break;
      const auto b = r.bytes();
      if (!b) break;
      containers.push_back(*b);
    } else if (!r.skip(w)) {
      break;
    }
  }
  if (!r.error().empty()) {
    error = r.error();
    return false;
  }
  for (const auto c : containers) {
    if (!read_container(c, name, ns, out, error)) return false;
  }
  return true;
}

}  // namespace

list_reply decode_list_response(std::string_view message) {
  list_reply out;
  if (message.size() > kMaxReplyBytes) {
    out.error = "a reply over 16 MiB";
    return out;
  }
  pod_wire_reader r(message);
  std::uint32_t f = 0;
  std::uint32_t w = 0;
  while (r.next(f, w)) {
    if (f == kResponsePodResources) {
      if (!expect_length(r, w, "ListPodResourcesResponse.pod_resources")) break;
      const auto b = r.bytes();
      if (!b) break;
      if (!read_pod(*b, out.devices, out.error)) break;
    } else if (!r.skip(w)) {
      break;
    }
  }
  if (out.error.empty()) out.error = r.error();
  if (!out.error.empty()) out.devices.clear();
  return out;
}

std::optional<std::string_view> grpc_message(std::string_view body) {
  if (body.size() < 5 || body[0] != 0) return std::nullopt;
  std::uint32_t n = 0;
  for (std::size_t i = 1; i < 5; ++i)
    n = (n << 8) | static_cast<unsigned char>(body[i]);
  if (n != body.size() - 5) return std::nullopt;
  return body.substr(5);
}

const std::vector<pod_ref>& device_pods::owners(std::string_view uuid) const {
  static const std::vector<pod_ref> none;
  const auto it = by_uuid.find(uuid);
  return it == by_uuid.end() ? none : it->second;
}

bool is_gpu_resource(std::string_view resource) {
  return resource == "nvidia.com/gpu" || resource.starts_with("nvidia.com/mig-");
}

std::string_view device_uuid(std::string_view device_id) {
  const auto at = device_id.find("::");
  return at == std::string_view::npos ? device_id : device_id.substr(0, at);
}

device_pods pods_by_device(const std::vector<device_assignment>& devices) {
  device_pods out;
  for (const auto& d : devices) {
    if (!is_gpu_resource(d.resource)) continue;
    const std::string_view uuid = device_uuid(d.device_id);
    if (uuid.empty()) continue;
    out.by_uuid[std::string(uuid)].push_back({d.pod, d.pod_namespace, d.container});
  }
  for (auto& [uuid, refs] : out.by_uuid) {
    std::sort(refs.begin(), refs.end());
    refs.erase(std::unique(refs.begin(), refs.end()), refs.end());
  }
  return out;
}

}  // namespace joules::kubelet
