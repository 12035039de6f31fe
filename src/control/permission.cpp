#include "control/permission.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "util/strings.hpp"

namespace joules::control {

std::optional<bool> cap_sys_admin_in(std::string_view status_text) {
  for (const auto& line : split(status_text, '\n')) {
    if (!line.starts_with("CapEff:")) continue;
    const std::string hex(trim(std::string_view(line).substr(7)));
    if (hex.empty() || hex.size() > 16) return std::nullopt;
    std::uint64_t mask = 0;
    for (const char c : hex) {
      int v = -1;
      if (c >= '0' && c <= '9') v = c - '0';
      if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
      if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
      if (v < 0) return std::nullopt;
      mask = mask << 4U | static_cast<std::uint64_t>(v);
    }
    return (mask >> kCapSysAdmin & 1U) != 0;
  }
  return std::nullopt;
}

limit_permission process_permission() {
  limit_permission p;
  p.root = geteuid() == 0;
  std::ifstream in("/proc/self/status");
  std::stringstream text;
  text << in.rdbuf();
  p.cap_sys_admin = cap_sys_admin_in(text.str());
  return p;
}

std::string limit_permission::describe() const {
  if (cap_sys_admin) {
    if (*cap_sys_admin) return root ? "yes (root)" : "yes (CAP_SYS_ADMIN)";
    return root ? "no: root without CAP_SYS_ADMIN (a container needs --cap-add SYS_ADMIN)"
                : fmt::format("no: needs root or CAP_SYS_ADMIN (uid {})", geteuid());
  }
  return root ? "probably (root; the capabilities could not be read)"
              : fmt::format("probably not: not root (uid {}; the capabilities could not be read)",
                            geteuid());
}

}  // namespace joules::control
