#pragma once
// The GPUs of one backend (NVML or sim) and the CPU and DRAM of another (src/backends/rapl) as one
// device list, GPUs first, so that the sampler reads them all on its one thread.  Meta data and MIG
// questions are the GPU backend's; the notices and component statuses of both are kept.
//
// Thread-safety: as for every backend.

#include <memory>

#include "backends/backend.hpp"

namespace joules {

class composite_backend final : public backend {
 public:
  // `gpus` may be null (--components without gpu); `cpus` may not.
  composite_backend(std::unique_ptr<backend> gpus, std::unique_ptr<backend> cpus);

  const backend_meta& meta() const override { return meta_; }
  const std::vector<device_info>& devices() const override { return devices_; }
  device_reading read(std::size_t i, read_what what) override;
  health_reading read_health(std::size_t i) override;
  device_capabilities probe_capabilities(std::size_t i) override;
  std::optional<std::string> parent_of_mig(std::string_view mig_uuid) override;
  power_limit_reading read_power_limit(std::size_t i) override;
  control_result set_power_limit(std::size_t i, std::uint32_t limit_mw) override;

 private:
  // The backend of device i and its index there.
  std::pair<backend*, std::size_t> locate(std::size_t i);

  std::unique_ptr<backend> gpus_;
  std::unique_ptr<backend> cpus_;
  std::size_t gpu_count_ = 0;
  backend_meta meta_;
  std::vector<device_info> devices_;
};

}  // namespace joules
