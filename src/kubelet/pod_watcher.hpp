#pragma once
// Which pod holds which GPU, kept fresh on its own thread (docs/kubernetes.md, "Pods on the
// series"): every `period` it asks the kubelet's pod-resources API (PodResourcesLister/List on
// its Unix socket) and publishes the answer.  A scrape reads the last answer and never waits
// for the kubelet.  A kubelet that cannot be reached, or answers what cannot be decoded, gives
// one note (and one more when it answers again) and an empty map: the series lose their pod
// labels, joules goes on.
//
// Thread-safety: current() may be called from any thread.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "kubelet/pod_resources.hpp"

namespace joules::kubelet {

// The kubelet's socket unless --kubelet-socket names another (dcgm-exporter's default too).
inline constexpr std::string_view kDefaultKubeletSocket =
    "/var/lib/kubelet/pod-resources/kubelet.sock";

// One List call: the devices by UUID, or an error naming what went wrong.
struct list_outcome {
  device_pods pods;
  std::string error;
};
list_outcome list_pods(const std::string& socket_path, std::chrono::milliseconds timeout);

class pod_watcher {
 public:
  using note_fn = std::function<void(const std::string&)>;
  // Starts the thread; the first answer is asked for at once.
  pod_watcher(std::string socket_path, std::chrono::milliseconds period,
              std::chrono::milliseconds timeout, note_fn note);
  ~pod_watcher();
  pod_watcher(const pod_watcher&) = delete;
  pod_watcher& operator=(const pod_watcher&) = delete;

  // The last answer (never null; empty until the first one and while the kubelet is away).
  std::shared_ptr<const device_pods> current() const;

 private:
  void loop();

  std::string socket_;
  std::chrono::milliseconds period_;
  std::chrono::milliseconds timeout_;
  note_fn note_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::shared_ptr<const device_pods> pods_;
  std::thread thread_;
};

}  // namespace joules::kubelet
