#pragma once
// Who and where a measurement is: the hostname and the run id on every record and series, and
// the rules for user labels.  One place, so that records of run, wrap and serve on the nodes of
// one job join up.

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace joules::session {

// JOULES_HOSTNAME when set and not empty, else the machine's hostname, else "unknown".
std::string host_name();
// The login name of the user joules runs as (the password database, else $USER); empty when
// neither knows.
std::string user_name();

// The run id: `option` (--run-id), else JOULES_RUN_ID, else the Slurm job (and step) id, else
// 12 random hexadecimal digits.
std::string resolve_run_id(const std::optional<std::string>& option);
// 1 to 128 printable ASCII characters without spaces.
bool valid_run_id(std::string_view id);

// A label key: letters, digits and _, not starting with a digit, at most 64 bytes.
bool valid_label_key(std::string_view key);
// Label names joules sets itself; a user label may not take them (they would be ambiguous in
// Prometheus and in joined JSONL).
inline constexpr std::array kReservedLabels = {"run_id",    "hostname",   "gpu",     "uuid",
                                               "model",     "pci_bus_id", "method",  "phase",
                                               "component", "job",        "instance"};

}  // namespace joules::session
