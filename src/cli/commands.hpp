#pragma once
// The subcommands.  Each has a table (command_spec) and a function; registering one is one line
// in commands.cpp.

#include <span>
#include <string>

#include "cli/options.hpp"

namespace joules::cli {

using command_main = int (*)(const parsed_args& args);

struct command_entry {
  const command_spec& (*spec)();
  command_main main;
};

const command_spec& run_spec();
int run_main(const parsed_args& args);
const command_spec& steps_spec();
int steps_main(const parsed_args& args);
const command_spec& wrap_spec();
int wrap_main(const parsed_args& args);
const command_spec& serve_spec();
int serve_main(const parsed_args& args);

const command_spec& monitor_spec();
int monitor_main(const parsed_args& args);
const command_spec& doctor_spec();
int doctor_main(const parsed_args& args);

// Every subcommand, in the order `joules --help` lists them.
std::span<const command_entry> all_command_entries();
// Their tables only, for the man page and completions.
std::span<const command_spec* const> all_commands();

}  // namespace joules::cli
