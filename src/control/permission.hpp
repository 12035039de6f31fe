#pragma once
// Whether this process may change a GPU's power limit, learnt without changing anything.  NVML
// has no query for it (docs/nvml-notes.md §4): nvmlDeviceSetPowerManagementLimit "requires
// root/admin permissions", and the NVIDIA kernel module's administrator test is
// capable(CAP_SYS_ADMIN).  So the answer is the process's effective CAP_SYS_ADMIN, read from the
// CapEff line of /proc/self/status (proc(5)); root without it (a container without
// --cap-add SYS_ADMIN) may not.  `doctor` reports this; `tune` also asks the driver itself,
// with a set of the limit already in force, once its journal is written (docs/tuning.md).
//
// Pure reads of /proc; thread-safe.

#include <optional>
#include <string>
#include <string_view>

namespace joules::control {

// CAP_SYS_ADMIN's bit in the capability sets (linux/capability.h).
inline constexpr unsigned kCapSysAdmin = 21;

struct limit_permission {
  bool root = false;                  // effective uid 0
  std::optional<bool> cap_sys_admin;  // nullopt: /proc/self/status could not be read
  // The best answer: the capability, or root where the capability is unknown.
  bool allowed() const { return cap_sys_admin.value_or(root); }
  // "yes (CAP_SYS_ADMIN)", "no: needs root or CAP_SYS_ADMIN (uid 1000)", ...
  std::string describe() const;
};

limit_permission process_permission();

// CAP_SYS_ADMIN in the CapEff line of a /proc/PID/status text; nullopt without that line.
std::optional<bool> cap_sys_admin_in(std::string_view status_text);

}  // namespace joules::control
