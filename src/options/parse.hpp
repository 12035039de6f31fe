#pragma once
// Reading a subcommand's command line against its declarations (cli/option_table.hpp), with
// CLI11 doing the options and joules the rest: where the command to run starts, a forgotten
// value, and one-line messages in joules' words for every mistake.

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "options/command.hpp"

namespace joules::options {

// A subcommand with its options declared on its own CLI11 app.
struct declared_command {
  std::unique_ptr<command> cmd;
  std::unique_ptr<CLI::App> app;
  std::unique_ptr<option_table> table;
};
declared_command declare(std::unique_ptr<command> cmd);

struct parse_result {
  bool help = false;                    // -h or --help was given: nothing else was checked
  std::vector<std::string> positional;  // the command to run, or the files
};

// Parses the arguments after the subcommand's name and stores every value into the command's
// settings.  Throws usage_error with one line naming the offending argument and what is
// accepted.
parse_result parse(declared_command& d, std::span<const std::string> args);

}  // namespace joules::options
