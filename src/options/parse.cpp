#include "options/parse.hpp"

// CLI11 is header-only: its formatter and config parser are defined where these are included.
#include <CLI/Config.hpp>
#include <CLI/Formatter.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

#include "options/suggest.hpp"
#include "util/error.hpp"

namespace joules::options {
namespace {

std::string see_help(std::string_view command) {
  return fmt::format("see joules {} --help", command);
}

const CLI::Option* find(const CLI::App& app, const std::string& name) {
  return app.get_option_no_throw(name);
}

// CLI11 names an option "--name" in its messages only with its long form set first; ours may be
// "-o,--output": name it as joules does.
std::string translate(const CLI::ParseError& e, const CLI::App& app, std::string_view command) {
  std::string what = e.what();
  if (dynamic_cast<const CLI::ValidationError*>(&e) != nullptr) {
    // "--x: 'v': expected ..." -> "--x 'v': expected ..."
    if (const auto colon = what.find(": '"); colon != std::string::npos) what.erase(colon, 1);
    for (const CLI::Option* o : app.get_options()) {
      const std::string n = o->get_name();
      if (what.starts_with(n + " ")) return option_name(o) + what.substr(n.size());
    }
    return what;
  }
  if (dynamic_cast<const CLI::ExcludesError*>(&e) != nullptr) {
    // "--a excludes --b"
    const auto at = what.find(" excludes ");
    if (at != std::string::npos) {
      return fmt::format("{} and {} both set: choose one", what.substr(0, at),
                         what.substr(at + 10));
    }
  }
  if (dynamic_cast<const CLI::RequiresError*>(&e) != nullptr) {
    // "--a requires --b"
    const auto at = what.find(" requires ");
    if (at != std::string::npos) {
      return fmt::format("{} applies only with {}", what.substr(0, at), what.substr(at + 10));
    }
  }
  return fmt::format("{}; {}", what, see_help(command));
}

}  // namespace

declared_command declare(std::unique_ptr<command> cmd) {
  declared_command d;
  d.app =
      std::make_unique<CLI::App>(std::string(cmd->text().summary), std::string(cmd->text().name));
  // joules prints its own help (cli/help.hpp) and decides what the first positional means.
  d.app->set_help_flag();
  d.app->allow_extras(false);
  d.table = std::make_unique<option_table>(*d.app);
  cmd->declare(*d.table);
  // Listed last; parse() acts on -h and --help before anything else is checked.
  static bool help_given = false;
  d.table->group("Other").flag("help", 'h', "Print this help and exit.", help_given);
  d.cmd = std::move(cmd);
  return d;
}

parse_result parse(declared_command& d, std::span<const std::string> args) {
  const std::string_view name = d.cmd->text().name;
  const CLI::App& app = *d.app;
  const positional_kind kind = d.table->positional();
  parse_result out;
  std::vector<std::string> options;
  // Where the options end and the positional arguments begin; CLI11 sees only the options.
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      out.positional.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    }
    if (a == "-h" || a == "--help") {
      out.help = true;
      return out;
    }
    if (a.size() < 2 || a[0] != '-') {
      if (kind == positional_kind::command) {
        out.positional.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
        break;
      }
      out.positional.push_back(a);
      continue;
    }
    const bool is_long = a.starts_with("--");
    const std::size_t eq = is_long ? a.find('=') : std::string::npos;
    const std::string key = is_long ? a.substr(0, eq) : a.substr(0, 2);
    const CLI::Option* o = find(app, key);
    if (o == nullptr) {
      std::vector<std::string> known;
      for (const CLI::Option* k : app.get_options())
        known.push_back(option_name(k));
      throw usage_error(fmt::format("unknown option '{}' for joules {}{}; {}", a, name,
                                    is_long ? suggestion(key, known) : "", see_help(name)));
    }
    const bool attached = is_long ? eq != std::string::npos : a.size() > 2;
    if (!d.table->takes_value(o)) {
      if (attached) {
        if (!is_long)
          throw usage_error(
              fmt::format("unknown option '{}' for joules {}; {}", a, name, see_help(name)));
        throw usage_error(fmt::format("{} takes no value (got '{}')", key, a.substr(eq + 1)));
      }
      options.push_back(a);
      continue;
    }
    options.push_back(a);
    if (attached) continue;
    // `--region -- cmd` is a forgotten value, not a region named "--": taking it would also
    // swallow the separator and run "cmd" as if it were an option.  Likewise `--output --json`.
    const std::string& n = option_name(o);
    const std::string value_name = d.table->meta(o).value_name;
    if (i + 1 >= args.size() || args[i + 1] == "--") {
      throw usage_error(fmt::format("{} needs a value ({}){}; {}", n, value_name,
                                    i + 1 >= args.size() ? "" : " before '--'", see_help(name)));
    }
    const std::string& next = args[i + 1];
    if (next.starts_with("--") && find(app, next.substr(0, next.find('='))) != nullptr) {
      throw usage_error(fmt::format("{} needs a value ({}), not the option '{}'; {}", n, value_name,
                                    next, see_help(name)));
    }
    options.push_back(next);
    ++i;
  }
  if (kind == positional_kind::none && !out.positional.empty()) {
    throw usage_error(fmt::format("joules {} takes no argument '{}'; {}", name,
                                  out.positional.front(), see_help(name)));
  }
  // CLI11 consumes its vector from the back.
  std::reverse(options.begin(), options.end());
  try {
    d.app->parse(options);
  } catch (const CLI::ParseError& e) {
    throw usage_error(translate(e, app, name));
  }
  d.table->apply();
  return out;
}

}  // namespace joules::options
