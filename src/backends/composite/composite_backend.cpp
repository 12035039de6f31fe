#include "backends/composite/composite_backend.hpp"

namespace joules {

composite_backend::composite_backend(std::vector<std::unique_ptr<backend>> gpus,
                                     std::unique_ptr<backend> cpus)
    : gpus_(std::move(gpus)), cpus_(std::move(cpus)) {
  if (gpus_.size() == 1) {
    meta_ = gpus_.front()->meta();
  } else if (!gpus_.empty()) {
    // Several vendors: the name says which ("nvml+amdsmi"); each keeps its own library,
    // driver and versions in `parts`, and the fields of the first one stand for the whole.
    meta_ = gpus_.front()->meta();
    meta_.parts.clear();
    std::string name;
    for (const auto& g : gpus_) {
      name += (name.empty() ? "" : "+") + g->meta().backend;
      meta_.parts.push_back(g->meta());
    }
    meta_.backend = name;
  } else if (cpus_) {
    meta_ = cpus_->meta();
  }
  for (const auto& g : gpus_)
    add(*g);
  if (cpus_) add(*cpus_);
}

void composite_backend::add(backend& b) {
  for (std::size_t k = 0; k < b.devices().size(); ++k) {
    devices_.push_back(b.devices()[k]);
    slots_.push_back(slot{&b, k});
  }
  notices_.insert(notices_.end(), b.notices().begin(), b.notices().end());
  components_.insert(components_.end(), b.components().begin(), b.components().end());
}

device_reading composite_backend::read(std::size_t i, read_what what) {
  const slot& s = slots_[i];
  return s.owner->read(s.index, what);
}

health_reading composite_backend::read_health(std::size_t i) {
  const slot& s = slots_[i];
  return s.owner->read_health(s.index);
}

device_capabilities composite_backend::probe_capabilities(std::size_t i) {
  const slot& s = slots_[i];
  return s.owner->probe_capabilities(s.index);
}

std::optional<std::string> composite_backend::parent_of_mig(std::string_view mig_uuid) {
  for (const auto& g : gpus_) {
    if (auto parent = g->parent_of_mig(mig_uuid)) return parent;
  }
  return std::nullopt;
}

const backend_meta& composite_backend::device_meta(std::size_t i) const {
  const slot& s = slots_[i];
  return s.owner->device_meta(s.index);
}

power_limit_reading composite_backend::read_power_limit(std::size_t i) {
  const slot& s = slots_[i];
  return s.owner->read_power_limit(s.index);
}

control_result composite_backend::set_power_limit(std::size_t i, std::uint32_t limit_mw) {
  const slot& s = slots_[i];
  return s.owner->set_power_limit(s.index, limit_mw);
}

}  // namespace joules
