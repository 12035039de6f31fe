#pragma once
// The options of one subcommand, declared once on a CLI11 app: each with its value name, help,
// default text, group, constraints (range, choices, needs, excludes) and where its value goes.
// `--help`, the man page, the completions and the error messages are all made from these
// declarations (cli/help.hpp), so they cannot drift apart.
//
// Values are checked by CLI11 validators whose messages name the value and what is accepted
// (`--interval '0': expected a whole number of milliseconds from 1 to 60000`); a value is stored
// into the command's settings only after the whole command line parsed, in declaration order,
// so that nothing starts and no file is touched on bad input.
//
// Not thread-safe; used on the main thread while the command line is read.

#include <CLI/App.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace joules::options {

// What a subcommand takes after its options.
enum class positional_kind {
  none,     // nothing
  command,  // CMD [ARGS...]: the first word that is not an option, or everything after `--`
  files,    // FILE... (zero or more)
};

// A condition on the command line as a whole that no single option can check (--sim-gpus only
// with --backend sim): run after parsing, before any value is stored.  `note` is what --help
// says about it on the option it concerns.
struct option_rule {
  CLI::Option* option = nullptr;
  std::string note;
  std::function<void()> check;
};

class option_table {
 public:
  explicit option_table(CLI::App& app) : app_(&app) {}

  // Options declared from now on are listed under `name` in --help.
  option_table& group(std::string_view name);

  // A flag: `--name` (and `-c` when `short_name` is not 0).  Sets `out` to true.
  CLI::Option* flag(std::string_view name, char short_name, std::string_view help, bool& out);

  // A value kept as given.  `check`, when set, throws usage_error for a value it refuses.
  CLI::Option* text(std::string_view name, char short_name, std::string_view value_name,
                    std::string_view help, std::string_view default_text,
                    std::function<void(const std::string&)> store);
  CLI::Option* text(std::string_view name, char short_name, std::string_view value_name,
                    std::string_view help, std::string_view default_text,
                    std::optional<std::string>& out);
  // A value that may be given several times; `store` is called with each, in order.
  CLI::Option* repeated(std::string_view name, std::string_view value_name, std::string_view help,
                        std::function<void(const std::string&)> store);

  // A whole number in [lo, hi]; `what` completes "expected a whole number of ..." or, when it
  // starts with "a ", replaces "a whole number" ("a number of GPUs").
  CLI::Option* count(std::string_view name, std::string_view value_name, std::string_view help,
                     std::string_view default_text, std::uint64_t lo, std::uint64_t hi,
                     std::string_view what, std::function<void(std::uint64_t)> store);
  CLI::Option* millis(std::string_view name, std::string_view help, std::string_view default_text,
                      std::uint64_t lo, std::uint64_t hi, std::chrono::milliseconds& out,
                      bool* given = nullptr);
  // A decimal number in [lo, hi] (C locale); `expected` is the whole "expected ..." phrase.
  CLI::Option* number(std::string_view name, std::string_view value_name, std::string_view help,
                      std::string_view default_text, double lo, double hi,
                      std::string_view expected,
                      std::function<void(double, const std::string&)> store);
  // One of `choices`.
  CLI::Option* choice(std::string_view name, std::string_view value_name, std::string_view help,
                      std::string_view default_text, std::vector<std::string> choices,
                      std::string& out);

  // `a` only with `b` given (CLI11's needs), and not both (excludes).
  void needs(CLI::Option* a, CLI::Option* b);
  void excludes(CLI::Option* a, CLI::Option* b);
  // A rule over several options (option_rule); `check` throws usage_error.
  void rule(CLI::Option* option, std::string_view note, std::function<void()> check);

  // The positional arguments the subcommand takes.
  void positional(positional_kind kind) { positional_ = kind; }
  positional_kind positional() const { return positional_; }

  CLI::App& app() { return *app_; }
  const CLI::App& app() const { return *app_; }
  // What --help shows of `o` besides its name and text.
  struct option_meta {
    std::string value_name;  // "MS"; empty for a flag
    std::string accepts;     // "From 1 to 60000.", "One of auto, nvml or sim."; or empty
    bool repeatable = false;
    std::vector<std::string> choices;  // choice(): the values it takes (for completions)
  };
  const option_meta& meta(const CLI::Option* o) const;
  // Whether `o` takes a value (a flag does not).
  bool takes_value(const CLI::Option* o) const { return !meta(o).value_name.empty(); }
  // The rules' notes for `o` ("Only with --backend sim."), for --help.
  std::vector<std::string> notes_for(const CLI::Option* o) const;
  // After CLI11 parsed: checks values given twice, runs the rules, then stores every value.
  // Throws usage_error.
  void apply() const;

 private:
  // A value option on the CLI11 app, bound to `store`.
  CLI::Option* add(std::string_view name, char short_name, std::string_view value_name,
                   std::string_view help, std::string_view default_text, bool repeatable,
                   std::string accepts, std::function<void(const std::string&)> store);
  struct binding {
    CLI::Option* option;
    bool repeatable;
    std::function<void(const std::string&)> store;
    option_meta meta;
  };

  CLI::App* app_;
  std::string group_ = "Options";
  std::vector<binding> bindings_;
  std::vector<option_rule> rules_;
  positional_kind positional_ = positional_kind::none;
};

// "--interval" for an option, as messages name it.
std::string option_name(const CLI::Option* o);

}  // namespace joules::options
