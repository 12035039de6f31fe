#include "cli/commands.hpp"

#include <array>

namespace joules::cli {

std::span<const command_spec* const> all_commands() {
  static const std::array<const command_spec*, 1> commands = {&run_spec()};
  return commands;
}

}  // namespace joules::cli
