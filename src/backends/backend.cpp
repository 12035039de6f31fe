#include "backends/backend.hpp"

namespace joules {

std::string_view to_string(energy_method m) {
  switch (m) {
    case energy_method::counter:
      return "counter";
    case energy_method::polled:
      return "polled";
    case energy_method::simulated:
      return "simulated";
    case energy_method::estimated:
      return "estimated";
    case energy_method::none:
      return "none";
  }
  return "none";
}

std::string_view to_string(power_source s) {
  switch (s) {
    case power_source::none:
      return "none";
    case power_source::field_instant:
      return "instant";
    case power_source::power_usage:
      return "power_usage";
    case power_source::socket_current:
      return "current_socket_power";
    case power_source::socket_average:
      return "average_socket_power";
    case power_source::model:
      return "model";
  }
  return "none";
}

const backend_meta* find_part(const backend_meta& meta, std::string_view name) {
  if (meta.backend == name) return &meta;
  for (const auto& p : meta.parts) {
    if (p.backend == name) return &p;
  }
  return nullptr;
}

std::string gpu_name(const device_info& d) {
  std::string name = "GPU " + std::to_string(d.index);
  if (d.vendor == "amd") return "AMD " + name;
  if (d.vendor == "intel") return "Intel " + name;
  return name;
}

std::string_view to_string(device_kind k) {
  switch (k) {
    case device_kind::gpu:
      return "gpu";
    case device_kind::cpu:
      return "cpu";
    case device_kind::dram:
      return "dram";
  }
  return "gpu";
}

std::string_view to_string(control_status s) {
  switch (s) {
    case control_status::ok:
      return "ok";
    case control_status::no_permission:
      return "no_permission";
    case control_status::not_supported:
      return "not_supported";
    case control_status::invalid:
      return "invalid";
    case control_status::lost:
      return "lost";
    case control_status::error:
      return "error";
  }
  return "error";
}

}  // namespace joules
