#include "cli/app.hpp"

#include <fmt/format.h>

#include <csignal>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "options/help.hpp"
#include "options/parse.hpp"
#include "proc/child.hpp"
#include "term/messages.hpp"
#include "util/error.hpp"

namespace joules::app {
namespace {

std::vector<options::declared_command> declare_all() {
  std::vector<options::declared_command> out;
  for (auto& c : cli::make_commands())
    out.push_back(options::declare(std::move(c)));
  return out;
}

int dispatch(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    if (args.size() >= 2 && args[0] == "help") return dispatch({args[1], "--help"});
    std::fputs(options::top_help(declare_all()).c_str(), stdout);
    return args.empty() ? kExitUsage : 0;
  }
  if (args[0] == "--version" || args[0] == "-V") {
    std::printf("joules %s\n", JOULES_VERSION);
    return 0;
  }
  if (args[0] == "manpage") {
    std::fputs(options::man_page(declare_all()).c_str(), stdout);
    return 0;
  }
  if (args[0] == "completion") {
    if (args.size() != 2 || args[1] != "bash") {
      throw usage_error("completion: expected `joules completion bash`");
    }
    std::fputs(options::bash_completion(declare_all()).c_str(), stdout);
    return 0;
  }
  for (auto& c : cli::make_commands()) {
    if (c->text().name != args[0]) continue;
    options::declared_command d = options::declare(std::move(c));
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    options::parse_result parsed = options::parse(d, rest);
    if (parsed.help) {
      std::fputs(options::help_text(d).c_str(), stdout);
      return 0;
    }
    return d.cmd->run(std::move(parsed.positional));
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
  // One error exit: one line on stderr (outside strings in it escaped), a small status.
  try {
    return dispatch(args);
  } catch (const usage_error& e) {
    term::print_error(e.what());
    return kExitUsage;
  } catch (const fatal_error& e) {
    term::print_error(e.what());
    return e.exit_status();
  } catch (const std::exception& e) {
    term::print_error(e.what());
    return kExitCannotMeasure;
  }
}

}  // namespace joules::app
