#include "control/restore.hpp"

namespace joules::control {

std::optional<std::size_t> device_with_uuid(const backend& b, const std::string& uuid) {
  const auto& all = b.devices();
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].kind == device_kind::gpu && all[i].uuid == uuid) return i;
  }
  return std::nullopt;
}

std::vector<restore_outcome> restore_limits(backend& b, const std::vector<journal_entry>& entries) {
  std::vector<restore_outcome> out;
  for (const auto& e : entries) {
    restore_outcome o;
    o.entry = e;
    const auto i = device_with_uuid(b, e.uuid);
    if (!i) {
      o.result = {control_status::lost, "no GPU with this UUID is here now"};
      out.push_back(std::move(o));
      continue;
    }
    o.found = true;
    o.before_mw = b.read_power_limit(*i).current_mw;
    o.result = b.set_power_limit(*i, e.original_mw);
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace joules::control
