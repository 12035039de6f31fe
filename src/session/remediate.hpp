#pragma once
// `joules remediate`: take a node out of service after a critical finding (docs/remediate.md).
// Drains it in Slurm (`scontrol update nodename=N state=drain reason=R`), cordons it in
// Kubernetes (`kubectl cordon N`) or runs the administrator's command.  A dry run unless
// `execute`: it then prints what it would run and runs and writes nothing.  Executing, it acts
// only on an allowed action, at most once per node per `min_interval` (the time of the last
// action per node is kept in `state_file`, under an exclusive lock), and appends one JSON line
// per decision to `journal`.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace joules::session {

enum class remediate_action { drain, cordon, command };

struct remediate_settings {
  remediate_action action = remediate_action::drain;
  std::vector<remediate_action> allowed{remediate_action::drain, remediate_action::cordon};
  std::string node;                   // empty: this machine's short hostname
  std::optional<std::string> reason;  // --reason
  std::optional<std::string> report;  // --report: a `joules doctor --json` report, "-" stdin
  std::vector<std::string> command;   // the command of `command`
  bool execute = false;
  std::chrono::seconds min_interval{3600};
  std::string state_file = "/var/lib/joules/remediate.state";
  std::string journal = "/var/log/joules/remediate.jsonl";
};

// Exit statuses besides 0 (acted, dry run printed, or nothing to do) and 2 (bad input).
inline constexpr int kRemediateFailed = 1;       // the action ran and failed
inline constexpr int kRemediateRateLimited = 3;  // the node was acted on too recently

std::string_view to_string(remediate_action a);
std::optional<remediate_action> parse_remediate_action(std::string_view s);

// The argument vector the action runs: scontrol, kubectl, or the command as given.
std::vector<std::string> remediate_argv(const remediate_settings& s, const std::string& node,
                                        const std::string& reason);

// The reason a `joules doctor --json` report gives to act: "joules doctor: GPU 1
// ecc_uncorrected, GPU 3 remap_failure" from its critical findings; nullopt when it has none.
// Throws usage_error for text that is not such a report.
std::optional<std::string> critical_reason(const std::string& report_json);

int remediate(const remediate_settings& settings);

}  // namespace joules::session
