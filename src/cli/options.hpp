#pragma once
// Command-line tables.  Each subcommand is one command_spec; the same table drives parsing,
// `--help`, the man page and shell completions, so they cannot drift apart (hyperfine's habit).
//
// Syntax: `joules SUBCOMMAND [OPTIONS] [--] [CMD [ARGS...]]`.  Options come first; for
// subcommands that run a command, the first word that is not an option (or everything after
// `--`) is the command, passed on untouched.  `--name VALUE` and `--name=VALUE` are both accepted;
// a separate VALUE may not be `--` or another of the subcommand's long options (a forgotten
// value), `--name=VALUE` takes any text.

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace joules::cli {

struct option_spec {
  std::string_view name;               // long name without dashes: "interval"
  char short_name = 0;                 // 'h' for -h, or 0
  std::string_view value_name;         // "MS"; empty for a flag
  std::string_view help;               // one or two sentences
  std::string_view default_text = {};  // shown as "(default: ...)"
  bool repeatable = false;
  std::string_view group = {};  // heading under which --help lists it
};

enum class positional_kind {
  none,     // no positional arguments
  command,  // CMD [ARGS...]
  files,    // FILE... (zero or more)
};

struct command_spec {
  std::string_view name;         // "run"
  std::string_view summary;      // one line for `joules --help`
  std::string_view usage;        // after "joules NAME ": "[OPTIONS] [--] CMD [ARGS...]"
  std::string_view description;  // paragraphs for `joules NAME --help`
  std::span<const option_spec> options;
  positional_kind positional = positional_kind::none;
  std::string_view examples = {};
};

class parsed_args {
 public:
  bool has(std::string_view name) const { return values_.count(std::string(name)) > 0; }
  std::optional<std::string> get(std::string_view name) const;
  std::vector<std::string> all(std::string_view name) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  friend parsed_args parse(const command_spec& spec, std::span<const std::string> args);
  std::map<std::string, std::vector<std::string>, std::less<>> values_;
  std::vector<std::string> positional_;
};

// Parses the arguments after the subcommand name.  Throws usage_error with one line naming the
// offending argument and what is accepted.
parsed_args parse(const command_spec& spec, std::span<const std::string> args);

// The full `joules NAME --help` text.
std::string help_text(const command_spec& spec);

// A man page section (troff) and a bash completion function generated from the same tables.
std::string man_page(std::span<const command_spec* const> commands);
std::string bash_completion(std::span<const command_spec* const> commands);

}  // namespace joules::cli
