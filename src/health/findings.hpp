#pragma once
// Health findings: what a device's health reading says is wrong (or worth knowing), each with a
// severity, a message for people, the fix, and a short flag for `monitor`'s health line.
// `doctor` turns them into its exit status: 0 healthy, 1 warnings, 2 unhealthy (a critical
// finding), so that a Slurm prologue or an init container can drain a node.
//
// Pure logic: no driver, no clock; tested with made-up readings.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.hpp"

namespace joules::health {

enum class severity { info, warning, critical };
std::string_view to_string(severity s);

struct finding {
  severity level = severity::info;
  std::string code;             // stable name for machines: "ecc_uncorrectable", ...
  std::optional<unsigned> gpu;  // the device's index, when it is about one device
  std::string vendor;           // and its vendor ("nvidia", "amd", "intel"): indices are per vendor
  std::string message;          // one sentence for people
  std::string fix;              // what to do about it; empty when nothing needs doing
  std::string flag;             // a few words for monitor's health line: "ECC unc 2"
};

// Exit statuses of `doctor`.
inline constexpr int kHealthy = 0;
inline constexpr int kWarnings = 1;
inline constexpr int kUnhealthy = 2;

// Findings from one health reading of device `d`.  `lost` is a device that stopped answering.
std::vector<finding> health_findings(const device_info& d, const health_reading& h,
                                     bool lost = false);

// 2 when any finding is critical, else 1 when any is a warning, else 0.
int exit_status(const std::vector<finding>& findings);

// "healthy", "warnings" or "unhealthy", for an exit status.
std::string_view status_name(int exit_status);

}  // namespace joules::health
