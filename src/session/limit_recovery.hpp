#pragma once
// Limits a joules left changed when it could not restore them (a SIGKILL, a power loss, a hung
// driver): the next joules to start restores them and says so, `joules tune --restore` does it on
// request, and `joules doctor` reports them (without changing them: doctor only reads).
// docs/tuning.md, "The restore guarantee".
//
// Not thread-safe: the main thread's, at start-up.

#include <string>
#include <vector>

#include "control/journal.hpp"

namespace joules::session {

// Restores every limit whose journal's owner has ended, with one line on stderr for each
// (restored, or why not and the fix).  Quiet and quick when there is no journal.  Never throws.
void restore_left_limits();

// `joules tune --restore`: the same, and a line for what is under way or was already in place.
// 0 when nothing is left changed, 1 when a limit could not be restored.
int restore_limits_on_request();

// A journal found, and whether the joules that wrote it still runs (holds its lock).
struct left_limit {
  control::journal_entry entry;
  bool owner_running = false;
};
// Every journal in the journal directories (doctor).  Never throws.
std::vector<left_limit> left_limits();

}  // namespace joules::session
