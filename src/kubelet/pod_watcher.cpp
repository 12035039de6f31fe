#include "kubelet/pod_watcher.hpp"

#include <fmt/format.h>

#include <utility>

#include "kubelet/grpc_client.hpp"
#include "text/escape.hpp"

namespace joules::kubelet {

list_outcome list_pods(const std::string& socket_path, std::chrono::milliseconds timeout) {
  list_outcome out;
  // ListPodResourcesRequest has no fields: its message is empty.
  const grpc_result r =
      grpc_unary_call(socket_path, "/v1.PodResourcesLister/List", {}, timeout, kMaxReplyBytes + 5);
  if (!r.error.empty()) {
    out.error = r.error;
    return out;
  }
  const auto message = grpc_message(r.body);
  if (!message) {
    out.error = "the reply is not one uncompressed gRPC message";
    return out;
  }
  list_reply reply = decode_list_response(*message);
  if (!reply.error.empty()) {
    out.error = "the reply cannot be decoded: " + reply.error;
    return out;
  }
  out.pods = pods_by_device(reply.devices);
  return out;
}

pod_watcher::pod_watcher(std::string socket_path, std::chrono::milliseconds period,
                         std::chrono::milliseconds timeout, note_fn note)
    : socket_(std::move(socket_path)),
      period_(period),
      timeout_(timeout),
      note_(std::move(note)),
      pods_(std::make_shared<const device_pods>()) {
  thread_ = std::thread([this] { loop(); });
}

pod_watcher::~pod_watcher() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<const device_pods> pod_watcher::current() const {
  std::lock_guard lock(mutex_);
  return pods_;
}

void pod_watcher::loop() {
  bool failing = false;
  bool first = true;
  std::unique_lock lock(mutex_);
  while (!stop_) {
    lock.unlock();
    list_outcome o = list_pods(socket_, timeout_);
    const bool ok = o.error.empty();
    if (!ok && (first || !failing) && note_) {
      note_(
          fmt::format("no pod labels: the kubelet's pod-resources API at {} did not answer ({}); "
                      "asking again every {} s",
                      text::escape_for_terminal(socket_), text::escape_for_terminal(o.error),
                      std::chrono::duration<double>(period_).count()));
    } else if (ok && failing && note_) {
      note_(fmt::format("pod labels again: the kubelet at {} answers",
                        text::escape_for_terminal(socket_)));
    }
    failing = !ok;
    first = false;
    auto next = std::make_shared<const device_pods>(std::move(o.pods));
    lock.lock();
    pods_ = std::move(next);
    wake_.wait_for(lock, period_, [this] { return stop_; });
  }
}

}  // namespace joules::kubelet
