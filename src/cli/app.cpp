#include "cli/app.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "proc/child.hpp"
#include "util/error.hpp"

namespace joules::app {
namespace {

// One line whatever the message quotes: a value the user gave with a newline or another control
// character in it is shown escaped (\n, \x1b), so the error stays one line (DESIGN.md, 6).
void print_error(const std::string& what) {
  std::string line;
  line.reserve(what.size());
  for (const char c : what) {
    const auto b = static_cast<unsigned char>(c);
    if (c == '\n') {
      line += "\\n";
    } else if (c == '\r') {
      line += "\\r";
    } else if (c == '\t') {
      line += "\\t";
    } else if (b < 0x20 || b == 0x7F) {
      line += fmt::format("\\x{:02x}", b);
    } else {
      line += c;
    }
  }
  std::fprintf(stderr, "joules: error: %s\n", line.c_str());
}

std::string top_help() {
  std::string out = fmt::format(
      "joules {}: the energy of GPU workloads, per run, per step, per token\n\n"
      "Usage: joules COMMAND [OPTIONS] [ARGS...]\n\nCommands:\n",
      JOULES_VERSION);
  for (const auto* c : cli::all_commands())
    out += fmt::format("  {:<12}{}\n", c->name, c->summary);
  out +=
      "\n  joules COMMAND --help   shows a command's options\n"
      "  joules --version        prints the version\n"
      "  joules completion bash  prints a bash completion script\n"
      "  joules manpage          prints the man page (troff)\n";
  return out;
}

int dispatch(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    if (args.size() >= 2 && args[0] == "help") return dispatch({args[1], "--help"});
    std::fputs(top_help().c_str(), stdout);
    return args.empty() ? kExitUsage : 0;
  }
  if (args[0] == "--version" || args[0] == "-V") {
    std::printf("joules %s\n", JOULES_VERSION);
    return 0;
  }
  if (args[0] == "manpage") {
    std::fputs(cli::man_page(cli::all_commands()).c_str(), stdout);
    return 0;
  }
  if (args[0] == "completion") {
    if (args.size() != 2 || args[1] != "bash") {
      throw usage_error("completion: expected `joules completion bash`");
    }
    std::fputs(cli::bash_completion(cli::all_commands()).c_str(), stdout);
    return 0;
  }
  for (const auto& entry : cli::all_command_entries()) {
    const cli::command_spec& spec = entry.spec();
    if (spec.name != args[0]) continue;
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    const cli::parsed_args parsed = cli::parse(spec, rest);
    if (parsed.has("help")) {
      std::fputs(cli::help_text(spec).c_str(), stdout);
      return 0;
    }
    return entry.main(parsed);
  }
  throw usage_error(fmt::format("unknown command '{}'; see joules --help", args[0]));
}

}  // namespace

int main(int argc, char** argv) {
  // Before any thread exists, so that every thread inherits it: signals joules forwards are
  // read from a signalfd, never delivered to a handler.
  child_process::block_signals();
  // A reader of our records that goes away must not kill joules (and orphan the command);
  // failed writes are counted instead.  The child gets SIGPIPE's default back at exec unless
  // whoever started joules ignored it.
  const auto previous = std::signal(SIGPIPE, SIG_IGN);
  child_process::reset_sigpipe_in_child(previous != SIG_IGN);
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    return dispatch(args);
  } catch (const usage_error& e) {
    print_error(e.what());
    return kExitUsage;
  } catch (const fatal_error& e) {
    print_error(e.what());
    return e.exit_status();
  } catch (const std::exception& e) {
    print_error(e.what());
    return kExitCannotMeasure;
  }
}

}  // namespace joules::app
