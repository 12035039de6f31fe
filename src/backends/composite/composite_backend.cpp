#include "backends/composite/composite_backend.hpp"

namespace joules {

composite_backend::composite_backend(std::unique_ptr<backend> gpus, std::unique_ptr<backend> cpus)
    : gpus_(std::move(gpus)), cpus_(std::move(cpus)) {
  if (gpus_) {
    meta_ = gpus_->meta();
    devices_ = gpus_->devices();
    notices_ = gpus_->notices();
    components_ = gpus_->components();
  } else {
    meta_ = cpus_->meta();
  }
  gpu_count_ = devices_.size();
  devices_.insert(devices_.end(), cpus_->devices().begin(), cpus_->devices().end());
  notices_.insert(notices_.end(), cpus_->notices().begin(), cpus_->notices().end());
  components_.insert(components_.end(), cpus_->components().begin(), cpus_->components().end());
}

std::pair<backend*, std::size_t> composite_backend::locate(std::size_t i) {
  if (i < gpu_count_) return {gpus_.get(), i};
  return {cpus_.get(), i - gpu_count_};
}

device_reading composite_backend::read(std::size_t i, read_what what) {
  const auto [b, k] = locate(i);
  return b->read(k, what);
}

health_reading composite_backend::read_health(std::size_t i) {
  const auto [b, k] = locate(i);
  return b->read_health(k);
}

device_capabilities composite_backend::probe_capabilities(std::size_t i) {
  const auto [b, k] = locate(i);
  return b->probe_capabilities(k);
}

std::optional<std::string> composite_backend::parent_of_mig(std::string_view mig_uuid) {
  return gpus_ ? gpus_->parent_of_mig(mig_uuid) : std::nullopt;
}

power_limit_reading composite_backend::read_power_limit(std::size_t i) {
  const auto [b, k] = locate(i);
  return b->read_power_limit(k);
}

control_result composite_backend::set_power_limit(std::size_t i, std::uint32_t limit_mw) {
  const auto [b, k] = locate(i);
  return b->set_power_limit(k, limit_mw);
}

}  // namespace joules
