#pragma once
// Everything joules says about its command line, made from the option declarations: each
// subcommand's --help, `joules --help`, the man page and the shell completions.

#include <span>
#include <string>

#include "options/parse.hpp"

namespace joules::options {

// Columns --help wraps to.
inline constexpr std::size_t kHelpWidth = 100;

// `joules NAME --help`: summary, usage, description, options by group, examples.
std::string help_text(const declared_command& d, std::size_t width = kHelpWidth);
// `joules --help`.
std::string top_help(std::span<const declared_command> commands);
// A man page (troff) with every subcommand and option.
std::string man_page(std::span<const declared_command> commands);
// A bash completion script: subcommands, options and, for choices, their values.
std::string bash_completion(std::span<const declared_command> commands);

}  // namespace joules::options
