#pragma once
// The CPU and DRAM as devices of the backend interface: one device per RAPL domain that
// powercap.hpp chose (kind cpu for packages or psys, kind dram), and, with --estimate-cpu where
// RAPL cannot measure the CPU, one estimated CPU device (cpu_estimate.hpp).  The sampler reads
// them with the GPUs, on the same thread, so that every window of a run splits CPU and DRAM
// energy at the same instants as the GPUs'.
//
// Thread-safety: as for every backend, read() on the sampler thread only.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "backends/rapl/cpu_estimate.hpp"
#include "backends/rapl/powercap.hpp"

namespace joules::rapl {

class cpu_backend final : public backend {
 public:
  // Looks at powercap under options.powercap_root and builds the devices that `options` asks
  // for.  Throws fatal_error when --components names a component that cannot be measured (with
  // the exact fix for unreadable counters), or --estimate-cpu finds no TDP.
  explicit cpu_backend(const component_options& options);

  const backend_meta& meta() const override { return meta_; }
  const std::vector<device_info>& devices() const override { return devices_; }
  device_reading read(std::size_t i, read_what what) override;

  const discovery& powercap() const { return discovery_; }

 private:
  void add_zones(const std::vector<std::size_t>& zones, device_kind kind);
  void add_estimate(const component_options& options);

  backend_meta meta_;
  discovery discovery_;
  cpu_identity cpu_;
  std::vector<device_info> devices_;
  std::vector<std::string> paths_;  // per device: the zone directory (empty: the estimate)
  // The estimate: TDP of all sockets, and the utilisation between reads.
  std::string proc_root_;
  double estimate_tdp_w_ = 0.0;
  utilisation util_;
};

}  // namespace joules::rapl
