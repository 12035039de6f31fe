// libFuzzer target for the kubelet's pod-resources reply (src/kubelet/pod_resources.hpp), which
// `joules serve --kubernetes` reads from a socket: the gRPC prefix and the protobuf message.
// Checked: a reply either decodes or says why, never both; what it decodes stays within the
// bounds; the map by device holds only GPU resources, each owner once.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_input.hpp"
#include "kubelet/pod_resources.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace joules::kubelet;
  const std::string_view bytes = joules::fuzz::as_text(data, size);
  for (const std::string_view message : {bytes, grpc_message(bytes).value_or(bytes)}) {
    const list_reply r = decode_list_response(message);
    JOULES_FUZZ_CHECK(r.error.empty() || r.devices.empty());
    JOULES_FUZZ_CHECK(r.devices.size() <= kMaxAssignments);
    for (const auto& d : r.devices) {
      for (const auto* s : {&d.pod, &d.pod_namespace, &d.container, &d.resource, &d.device_id})
        JOULES_FUZZ_CHECK(s->size() <= kMaxStringBytes && s->size() <= size);
    }
    const device_pods pods = pods_by_device(r.devices);
    for (const auto& [uuid, owners] : pods.by_uuid) {
      JOULES_FUZZ_CHECK(!uuid.empty() && uuid.find("::") == std::string::npos);
      JOULES_FUZZ_CHECK(!owners.empty() && std::is_sorted(owners.begin(), owners.end()));
      JOULES_FUZZ_CHECK(std::adjacent_find(owners.begin(), owners.end()) == owners.end());
      JOULES_FUZZ_CHECK(&pods.owners(uuid) == &owners);
    }
  }
  if (const auto m = grpc_message(bytes)) JOULES_FUZZ_CHECK(m->size() + 5 == size);
  return 0;
}
