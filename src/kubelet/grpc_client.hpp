#pragma once
// One gRPC unary call over a Unix socket (docs/kubernetes.md, "How joules asks the kubelet"):
// HTTP/2 through libnghttp2 (connection preface, SETTINGS, HPACK headers, flow control), the
// request as one DATA frame with gRPC's 5-byte prefix, the reply's DATA and its trailers
// (grpc-status).  Used for the kubelet's pod-resources API; nothing is retried here.
//
// Thread-safety: none shared; each call has its own connection.

#include <chrono>
#include <string>
#include <string_view>

namespace joules::kubelet {

struct grpc_result {
  std::string body;   // the reply's DATA bytes (still with gRPC's prefix); empty on error
  std::string error;  // empty when the call ended with grpc-status 0
};

// Calls `method` (e.g. /v1.PodResourcesLister/List) on the server at `socket_path` with the
// protobuf bytes `request`.  The whole call (connect included) ends by `timeout`; a reply body
// over `max_body` bytes ends it with an error.
grpc_result grpc_unary_call(const std::string& socket_path, std::string_view method,
                            std::string_view request, std::chrono::milliseconds timeout,
                            std::size_t max_body);

}  // namespace joules::kubelet
