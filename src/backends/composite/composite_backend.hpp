#pragma once
// The GPUs of one or more backends (NVML, AMD SMI, Level Zero, or the simulated ones) and the
// CPU and DRAM of another (src/backends/rapl) as one device list, GPUs first and in the order
// the GPU backends are given, so that the sampler reads them all on its one thread.  Each device
// keeps its backend's key (UUID, else PCI bus id) and vendor; the meta of every GPU backend is
// kept in meta().parts, and MIG questions go to each GPU backend in turn.
//
// Thread-safety: as for every backend.

#include <memory>
#include <vector>

#include "backends/backend.hpp"

namespace joules {

class composite_backend final : public backend {
 public:
  // `gpus` may be empty (--components without gpu); `cpus` may be null when `gpus` is not
  // empty.
  composite_backend(std::vector<std::unique_ptr<backend>> gpus, std::unique_ptr<backend> cpus);

  const backend_meta& meta() const override { return meta_; }
  const std::vector<device_info>& devices() const override { return devices_; }
  device_reading read(std::size_t i, read_what what) override;
  health_reading read_health(std::size_t i) override;
  device_capabilities probe_capabilities(std::size_t i) override;
  std::optional<std::string> parent_of_mig(std::string_view mig_uuid) override;
  power_limit_reading read_power_limit(std::size_t i) override;
  const backend_meta& device_meta(std::size_t i) const override;
  control_result set_power_limit(std::size_t i, std::uint32_t limit_mw) override;

 private:
  struct slot {
    backend* owner;
    std::size_t index;  // the device's index within its backend
  };

  void add(backend& b);

  std::vector<std::unique_ptr<backend>> gpus_;
  std::unique_ptr<backend> cpus_;
  std::vector<slot> slots_;
  backend_meta meta_;
  std::vector<device_info> devices_;
};

}  // namespace joules
