#pragma once
// Everything joules says about its command line, made from the option declarations: each
// subcommand's --help, `joules --help`, the man page and the shell completions.

#include <span>
#include <string>

#include "options/parse.hpp"

namespace joules::options {

// Columns --help wraps to when the output is not a terminal; a terminal's own width otherwise
// (kMinHelpWidth to kMaxHelpWidth).
inline constexpr std::size_t kHelpWidth = 80;
inline constexpr std::size_t kMinHelpWidth = 60;
inline constexpr std::size_t kMaxHelpWidth = 160;

// `joules NAME --help`: summary, usage, description, options by group, examples.
std::string help_text(const declared_command& d, std::size_t width = kHelpWidth);
// `joules --help`.
std::string top_help(std::span<const declared_command> commands);
// joules(1): the commands, each with a page of its own.
std::string man_page(std::span<const declared_command> commands);
// joules-NAME(1): one command's description, options by group and examples.
std::string man_page(const declared_command& command);

}  // namespace joules::options
