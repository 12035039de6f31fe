#pragma once
// joules' subcommands, each declared in its own file (src/cli/*_command.cpp).

#include <memory>
#include <vector>

#include "options/command.hpp"

namespace joules::cli {

// One fresh object per subcommand, in the order `joules --help` lists them.
std::vector<std::unique_ptr<options::command>> make_commands();

// Makers, one per subcommand (cli/*_command.cpp).
std::unique_ptr<options::command> make_run_command();
std::unique_ptr<options::command> make_wrap_command();
std::unique_ptr<options::command> make_tune_command();
std::unique_ptr<options::command> make_sweep_command();
std::unique_ptr<options::command> make_steps_command();
std::unique_ptr<options::command> make_monitor_command();
std::unique_ptr<options::command> make_doctor_command();
std::unique_ptr<options::command> make_serve_command();
std::unique_ptr<options::command> make_remediate_command();
std::unique_ptr<options::command> make_report_command();
std::unique_ptr<options::command> make_diff_command();
std::unique_ptr<options::command> make_aggregate_command();

}  // namespace joules::cli
