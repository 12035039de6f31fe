#pragma once
// A subcommand: its words for --help and the man page, its option declarations, and what it
// does once the command line is read (open a session, render).  Registering one is one line in
// cli/commands.cpp.
//
// Syntax: `joules SUBCOMMAND [OPTIONS] [--] [CMD [ARGS...]]`.  `--name VALUE`, `--name=VALUE`,
// `-o VALUE` and `-oVALUE` are accepted; a separate VALUE may not be `--` or one of the
// subcommand's long options (a forgotten value).  For subcommands that run a command, the first
// word that is not an option (or everything after `--`) is the command, passed on untouched.

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "options/option_table.hpp"

namespace joules::options {

struct command_text {
  std::string_view name;         // "run"
  std::string_view summary;      // one line for `joules --help`
  std::string_view usage;        // after "joules NAME ": "[OPTIONS] [--] CMD [ARGS...]"
  std::string_view description;  // paragraphs (separated by \n) for `joules NAME --help`
  std::string_view examples;     // one per line
};

class command {
 public:
  virtual ~command() = default;
  virtual const command_text& text() const = 0;
  // Declares every option on `table`, bound to settings this object owns.
  virtual void declare(option_table& table) = 0;
  // After the command line was read and every value stored: runs, and returns the exit status.
  // `positional` is the command to run or the files, per table.positional().
  virtual int run(std::vector<std::string> positional) = 0;
};

}  // namespace joules::options
