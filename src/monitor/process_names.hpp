#pragma once
// Who runs a process on a GPU, and what: the user owning /proc/<pid> and its command line.  NVML
// reports host pids (the driver ignores pid namespaces, docs/nvml-notes.md §9.4), so inside a
// container most lookups fail: the name is then left empty and shown as "?".
//
// Not thread-safe: the monitor's main thread only.

#include <map>
#include <string>

namespace joules::monitor {

class process_names {
 public:
  // `proc_root`: where procfs is mounted ("/proc"; tests point it elsewhere).
  explicit process_names(std::string proc_root = "/proc") : root_(std::move(proc_root)) {}

  struct entry {
    std::string user;     // empty: unknown
    std::string command;  // empty: unknown
  };

  // Looks a pid up once and remembers it while it keeps being asked for (forget_unused()).
  const entry& lookup(unsigned pid);
  // Forgets pids not looked up since the previous call (a pid may be reused by another process).
  void forget_unused();

 private:
  entry read(unsigned pid) const;

  std::string root_;
  std::map<unsigned, std::pair<entry, bool>> cache_;  // pid -> (entry, used since last sweep)
};

// The user name of `uid`, or the number when it has none.
std::string user_name(unsigned uid);

}  // namespace joules::monitor
