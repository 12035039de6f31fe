#include "cli/commands.hpp"

#include <array>
#include <vector>

namespace joules::cli {

std::span<const command_entry> all_command_entries() {
  // One entry a line, whatever their number (clang-format would pack them into columns).
  // clang-format off
  static const std::array entries = {
      command_entry{run_spec, run_main},
      command_entry{wrap_spec, wrap_main},
      command_entry{steps_spec, steps_main},
      command_entry{monitor_spec, monitor_main},
      command_entry{doctor_spec, doctor_main},
      command_entry{serve_spec, serve_main},
  };
  // clang-format on
  return entries;
}

std::span<const command_spec* const> all_commands() {
  static const std::vector<const command_spec*> specs = [] {
    std::vector<const command_spec*> out;
    for (const auto& e : all_command_entries())
      out.push_back(&e.spec());
    return out;
  }();
  return specs;
}

}  // namespace joules::cli
