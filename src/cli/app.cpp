#include "cli/app.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "options/completion.hpp"
#include "options/help.hpp"
#include "options/parse.hpp"
#include "options/suggest.hpp"
#include "proc/child.hpp"
#include "session/doctor.hpp"
#include "session/limit_recovery.hpp"
#include "term/messages.hpp"
#include "term/terminal.hpp"
#include "util/error.hpp"

namespace joules::app {
namespace {

std::vector<options::declared_command> declare_all() {
  std::vector<options::declared_command> out;
  for (auto& c : cli::make_commands())
    out.push_back(options::declare(std::move(c)));
  return out;
}

// Columns for --help: the terminal's when stdout is one, else 80.
std::size_t help_width() {
  const term::capabilities out = term::of(STDOUT_FILENO);
  if (!out.tty) return options::kHelpWidth;
  return std::clamp(out.columns, options::kMinHelpWidth, options::kMaxHelpWidth);
}

std::vector<std::string> command_names() {
  std::vector<std::string> names;
  for (const auto& c : cli::make_commands())
    names.emplace_back(c->text().name);
  return names;
}

// `joules manpage [COMMAND]` and `joules completion SHELL`: text made from the declarations.
int print_generated(const std::vector<std::string>& args) {
  const auto all = declare_all();
  if (args[0] == "manpage") {
    if (args.size() == 1) {
      std::fputs(options::man_page(all).c_str(), stdout);
      return 0;
    }
    for (const auto& d : all) {
      if (args.size() == 2 && d.cmd->text().name == args[1]) {
        std::fputs(options::man_page(d).c_str(), stdout);
        return 0;
      }
    }
    throw usage_error(fmt::format(
        "manpage: expected no argument or one of {}{}", fmt::join(command_names(), ", "),
        args.size() == 2 ? options::suggestion(args[1], command_names()) : ""));
  }
  const std::vector<std::string> shells = {"bash", "zsh", "fish"};
  const std::string shell = args.size() == 2 ? args[1] : "";
  if (shell == "bash") std::fputs(options::bash_completion(all).c_str(), stdout);
  if (shell == "zsh") std::fputs(options::zsh_completion(all).c_str(), stdout);
  if (shell == "fish") std::fputs(options::fish_completion(all).c_str(), stdout);
  if (std::find(shells.begin(), shells.end(), shell) == shells.end()) {
    throw usage_error(fmt::format("completion: expected bash, zsh or fish{}",
                                  options::suggestion(shell, shells)));
  }
  return 0;
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
  if (args[0] == "manpage" || args[0] == "completion") return print_generated(args);
  for (auto& c : cli::make_commands()) {
    if (c->text().name != args[0]) continue;
    options::declared_command d = options::declare(std::move(c));
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    options::parse_result parsed = options::parse(d, rest);
    if (parsed.help) {
      std::fputs(options::help_text(d, help_width()).c_str(), stdout);
      return 0;
    }
    // Power limits a joules left changed (a SIGKILL, a power loss) are set back by the next
    // joules to start, whatever it is asked to do (docs/tuning.md) — but doctor, which only
    // reports them, and tune --restore, which does this itself and says more.
    const auto options_end = std::find(rest.begin(), rest.end(), "--");
    const bool restores_itself =
        args[0] == "tune" && std::find(rest.begin(), options_end, "--restore") != options_end;
    if (args[0] != "doctor" && !restores_itself) session::restore_left_limits();
    return d.cmd->run(std::move(parsed.positional));
  }
  std::vector<std::string> names = command_names();
  names.insert(names.end(), {"help", "completion", "manpage"});
  throw usage_error(fmt::format("unknown command '{}'{}; see joules --help", args[0],
                                options::suggestion(args[0], names)));
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
  // doctor's 0, 1 and 2 say how healthy the node is: its own errors get a status of their own.
  const bool doctor = !args.empty() && args[0] == "doctor";
  // One error exit: one line on stderr (outside strings in it escaped), a small status.
  try {
    return dispatch(args);
  } catch (const usage_error& e) {
    term::print_error(e.what());
    return doctor ? session::kDoctorError : kExitUsage;
  } catch (const fatal_error& e) {
    term::print_error(e.what());
    return doctor ? session::kDoctorError : e.exit_status();
  } catch (const std::exception& e) {
    term::print_error(e.what());
    return doctor ? session::kDoctorError : kExitCannotMeasure;
  }
}

}  // namespace joules::app
