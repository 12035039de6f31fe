#pragma once
// The subcommands.  Each has a table (command_spec) and a function; app.cpp dispatches.

#include <span>
#include <string>

#include "cli/options.hpp"

namespace joules::cli {

const command_spec& run_spec();
int run_main(const parsed_args& args);

// Every subcommand's table, for `joules --help`, the man page and completions.
std::span<const command_spec* const> all_commands();

}  // namespace joules::cli
