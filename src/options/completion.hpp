#pragma once
// Shell completions made from the option declarations: subcommands, options, the values of
// options with choices, file names where a file is expected, the machine's GPU indices and UUIDs
// for --gpus (from nvidia-smi when it is there), and commands after `run`/`wrap`.

#include <span>
#include <string>

#include "options/parse.hpp"

namespace joules::options {

std::string bash_completion(std::span<const declared_command> commands);
std::string zsh_completion(std::span<const declared_command> commands);
std::string fish_completion(std::span<const declared_command> commands);

}  // namespace joules::options
