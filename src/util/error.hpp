#pragma once
// The two ways joules itself fails.  app::main catches both once and prints
// "joules: error: <what>" on stderr; nothing else in joules prints errors or calls exit().

#include <stdexcept>
#include <string>

namespace joules {

// Exit statuses of joules' own failures.  Everything else is the child's exit status.
inline constexpr int kExitUsage = 2;  // bad input: nothing was started, no file truncated
inline constexpr int kExitCannotMeasure =
    125;  // joules could not do its job (as timeout(1), env(1))
inline constexpr int kExitCannotExecute = 126;  // the command exists but cannot be run
inline constexpr int kExitNotFound = 127;       // the command was not found

// Bad input: one line naming the value and what is accepted.
class usage_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Any other failure, with the exit status to end with.
class fatal_error : public std::runtime_error {
 public:
  explicit fatal_error(const std::string& what, int exit_status = kExitCannotMeasure)
      : std::runtime_error(what), exit_status_(exit_status) {}
  int exit_status() const noexcept { return exit_status_; }

 private:
  int exit_status_;
};

// A fatal_error that says there is nothing to measure here: no driver, no library, no GPU (the
// library API tells it apart from a driver that failed: JOULES_E_NO_DEVICE).
class no_device_error : public fatal_error {
 public:
  using fatal_error::fatal_error;
};

}  // namespace joules
