// `joules remediate`: drain (Slurm), cordon (Kubernetes) or a command after a critical finding.

#include <fmt/format.h>

#include <algorithm>

#include "cli/commands.hpp"
#include "session/remediate.hpp"
#include "util/error.hpp"

namespace joules::cli {
namespace {

constexpr options::command_text kRemediateText{
    "remediate", "drain or cordon a node after a critical finding",
    "[OPTIONS] [--] [CMD [ARGS...]]",
    "Drains this node in Slurm (scontrol update nodename=NODE state=drain reason=REASON), "
    "cordons it in Kubernetes (kubectl cordon NODE), or runs CMD with JOULES_REMEDIATE_NODE and "
    "JOULES_REMEDIATE_REASON in its environment. The reason is --reason, or the critical "
    "findings of a `joules doctor --json` report (--report; a report without one does nothing "
    "and exits 0).\n"
    "Without --execute it is a dry run: it prints the command it would run, and runs and writes "
    "nothing. With --execute it acts only if the action is in --allow, and at most once per node "
    "per --min-interval (the last action per node is kept in --state-file, under a lock; a node "
    "acted on too recently exits 3 with nothing run). Every decision is one JSON line in "
    "--journal: time, node, action, reason, command, outcome (done, failed, rate_limited), exit "
    "status and output. Exit status: 0 done, dry run or nothing to do; 1 the action failed; 2 "
    "bad input; 3 held back by the rate limit. docs/remediate.md.",
    "joules remediate --reason 'GPU 3 lost'\n"
    "joules doctor --json > doctor.json; joules remediate --report doctor.json\n"
    "joules remediate --action cordon --node gpu-node-7 --reason 'ECC errors'\n"
    "joules remediate --action command --allow command --reason ECC -- logger"};

class remediate_command final : public options::command {
 public:
  const options::command_text& text() const override { return kRemediateText; }
  void declare(options::option_table& t) override;
  int run(std::vector<std::string> positional) override {
    s_.command = std::move(positional);
    s_.action = *session::parse_remediate_action(action_);
    if (s_.action == session::remediate_action::command && s_.command.empty())
      throw usage_error("--action command: expected the command after the options (-- CMD ...)");
    if (s_.action != session::remediate_action::command && !s_.command.empty())
      throw usage_error(
          fmt::format("--action {}: takes no command ('{}' given); use --action "
                      "command to run one",
                      action_, s_.command.front()));
    if (!s_.reason && !s_.report)
      throw usage_error("joules remediate: expected --reason TEXT or --report FILE");
    bool allowed = false;
    for (auto a : s_.allowed)
      allowed = allowed || a == s_.action;
    if (!allowed)
      throw usage_error(
          fmt::format("--action {}: not in --allow; allowed: {}", action_, allowed_text()));
    return session::remediate(s_);
  }

 private:
  std::string allowed_text() const {
    std::string out;
    for (auto a : s_.allowed)
      out += (out.empty() ? "" : ",") + std::string(session::to_string(a));
    return out.empty() ? "none" : out;
  }

  session::remediate_settings s_;
  std::string action_ = "drain";
};

void remediate_command::declare(options::option_table& t) {
  t.positional(options::positional_kind::command);
  t.group("Action");
  t.choice("action", "ACTION",
           "drain: scontrol update nodename=NODE state=drain reason=REASON (Slurm); cordon: "
           "kubectl cordon NODE (Kubernetes); command: run CMD.",
           "drain", {"drain", "cordon", "command"}, action_);
  t.text("node", 0, "NAME", "The node to act on.", "this machine's hostname up to the first dot",
         [this](const std::string& v) {
           if (v.empty() || v.find_first_of(" \t\n=") != std::string::npos)
             throw usage_error(fmt::format("--node '{}': expected a node name", v));
           s_.node = v;
         });
  t.text("reason", 0, "TEXT", "Why, as Slurm shows it (scontrol show node) and the journal keeps.",
         "", [this](const std::string& v) {
           if (v.empty() || v.find('\n') != std::string::npos)
             throw usage_error("--reason: expected one line of text");
           s_.reason = v;
         });
  t.text("report", 0, "FILE",
         "A `joules doctor --json` report (- for standard input): act only when it has a critical "
         "finding, which becomes the reason.",
         "", [this](const std::string& v) { s_.report = v; });
  t.group("Safety");
  t.flag("execute", 0, "Act. Without it, print the command that would run and change nothing.",
         s_.execute);
  t.text("allow", 0, "LIST", "The actions that may run, comma-separated (drain, cordon, command).",
         "drain,cordon", [this](const std::string& v) {
           s_.allowed.clear();
           std::size_t start = 0;
           while (start <= v.size()) {
             const auto end = std::min(v.find(',', start), v.size());
             const auto word = v.substr(start, end - start);
             const auto a = session::parse_remediate_action(word);
             if (!a)
               throw usage_error(
                   fmt::format("--allow '{}': expected actions among drain, cordon, command", v));
             s_.allowed.push_back(*a);
             start = end + 1;
           }
         });
  t.count("min-interval", "S", "At most one action per node within this many seconds.", "3600", 0,
          604800, "seconds", [this](std::uint64_t n) {
            s_.min_interval = std::chrono::seconds(static_cast<std::int64_t>(n));
          });
  t.text("state-file", 0, "FILE", "Where the time of the last action per node is kept.",
         "/var/lib/joules/remediate.state", [this](const std::string& v) { s_.state_file = v; });
  t.text("journal", 0, "FILE", "The JSONL audit journal: one line per decision, appended.",
         "/var/log/joules/remediate.jsonl", [this](const std::string& v) { s_.journal = v; });
}

}  // namespace

std::unique_ptr<options::command> make_remediate_command() {
  return std::make_unique<remediate_command>();
}

}  // namespace joules::cli
