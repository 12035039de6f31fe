#include "options/option_table.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "options/suggest.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

namespace joules::options {
namespace {

// A CLI11 validator whose failure message is "'VALUE': expected ..." (CLI11 puts the option's
// name in front: cli/parse.cpp turns "--x: 'v': ..." into "--x 'v': ...").
CLI::Validator expecting(std::string description, std::function<bool(const std::string&)> ok,
                         std::string expected) {
  return CLI::Validator(
      [ok = std::move(ok), expected = std::move(expected)](std::string& v) -> std::string {
        return ok(v) ? std::string() : fmt::format("'{}': expected {}", v, expected);
      },
      std::move(description));
}

std::string count_phrase(std::string_view what, std::uint64_t lo, std::uint64_t hi) {
  if (what.starts_with("a ")) return fmt::format("{} from {} to {}", what, lo, hi);
  return fmt::format("a whole number of {} from {} to {}", what, lo, hi);
}

std::string names(std::string_view name, char short_name) {
  return short_name != 0 ? fmt::format("-{},--{}", short_name, name) : fmt::format("--{}", name);
}

}  // namespace

std::string option_name(const CLI::Option* o) {
  if (!o->get_lnames().empty()) return "--" + o->get_lnames().front();
  if (!o->get_snames().empty()) return "-" + o->get_snames().front();
  return o->get_name();
}

option_table& option_table::group(std::string_view name) {
  group_ = std::string(name);
  return *this;
}

CLI::Option* option_table::add(std::string_view name, char short_name, std::string_view value_name,
                               std::string_view help, std::string_view default_text,
                               bool repeatable, std::string accepts,
                               std::function<void(const std::string&)> store) {
  CLI::Option* o = app_->add_option(names(name, short_name));
  o->description(std::string(help));
  o->group(group_);
  o->type_name(std::string(value_name));
  if (!default_text.empty()) o->default_str(std::string(default_text));
  // Every value is collected; apply() decides what a repeat means (an error for a value given
  // twice differently, a list for a repeatable option).
  o->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  o->allow_extra_args(false);
  bindings_.push_back({o, repeatable, std::move(store),
                       option_meta{std::string(value_name), std::move(accepts), repeatable, {}}});
  return o;
}

CLI::Option* option_table::flag(std::string_view name, char short_name, std::string_view help,
                                bool& out) {
  CLI::Option* o = app_->add_flag(names(name, short_name));
  o->description(std::string(help));
  o->group(group_);
  o->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  bindings_.push_back({o, true, [&out](const std::string&) { out = true; }, option_meta{}});
  return o;
}

CLI::Option* option_table::text(std::string_view name, char short_name, std::string_view value_name,
                                std::string_view help, std::string_view default_text,
                                std::function<void(const std::string&)> store) {
  return add(name, short_name, value_name, help, default_text, false, {}, std::move(store));
}

CLI::Option* option_table::text(std::string_view name, char short_name, std::string_view value_name,
                                std::string_view help, std::string_view default_text,
                                std::optional<std::string>& out) {
  return text(name, short_name, value_name, help, default_text,
              [&out](const std::string& v) { out = v; });
}

CLI::Option* option_table::repeated(std::string_view name, std::string_view value_name,
                                    std::string_view help,
                                    std::function<void(const std::string&)> store) {
  return add(name, 0, value_name, help, "", true, {}, std::move(store));
}

CLI::Option* option_table::count(std::string_view name, std::string_view value_name,
                                 std::string_view help, std::string_view default_text,
                                 std::uint64_t lo, std::uint64_t hi, std::string_view what,
                                 std::function<void(std::uint64_t)> store) {
  const std::string range = fmt::format("{} to {}", lo, hi);
  CLI::Option* o = add(
      name, 0, value_name, help, default_text, false, fmt::format("From {}.", range),
      [store = std::move(store), lo, hi](const std::string& v) { store(*parse_uint(v, lo, hi)); });
  o->check(expecting(
      range, [lo, hi](const std::string& v) { return parse_uint(v, lo, hi).has_value(); },
      count_phrase(what, lo, hi)));
  return o;
}

CLI::Option* option_table::millis(std::string_view name, std::string_view help,
                                  std::string_view default_text, std::uint64_t lo, std::uint64_t hi,
                                  std::chrono::milliseconds& out, bool* given) {
  return count(name, "MS", help, default_text, lo, hi, "milliseconds",
               [&out, given](std::uint64_t ms) {
                 out = std::chrono::milliseconds(static_cast<std::int64_t>(ms));
                 if (given != nullptr) *given = true;
               });
}

CLI::Option* option_table::number(std::string_view name, std::string_view value_name,
                                  std::string_view help, std::string_view default_text, double lo,
                                  double hi, std::string_view expected,
                                  std::function<void(double, const std::string&)> store) {
  const std::string range = fmt::format("{:g} to {:g}", lo, hi);
  CLI::Option* o =
      add(name, 0, value_name, help, default_text, false, fmt::format("From {}.", range),
          [store = std::move(store)](const std::string& v) { store(*parse_double(v), v); });
  o->check(expecting(
      range,
      [lo, hi](const std::string& v) {
        const auto d = parse_double(v);
        return d && *d >= lo && *d <= hi;
      },
      std::string(expected)));
  return o;
}

CLI::Option* option_table::choice(std::string_view name, std::string_view value_name,
                                  std::string_view help, std::string_view default_text,
                                  std::vector<std::string> choices, std::string& out) {
  std::string list;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) list += i + 1 == choices.size() ? " or " : ", ";
    list += choices[i];
  }
  CLI::Option* o = add(name, 0, value_name, help, default_text, false,
                       fmt::format("One of {}.", list), [&out](const std::string& v) { out = v; });
  bindings_.back().meta.choices = choices;
  o->check(CLI::Validator(
      [choices = std::move(choices), list](std::string& v) -> std::string {
        if (std::find(choices.begin(), choices.end(), v) != choices.end()) return {};
        return fmt::format("'{}': expected {}{}", v, list, suggestion(v, choices));
      },
      list));
  return o;
}

void option_table::needs(CLI::Option* a, CLI::Option* b) {
  a->needs(b);
}

void option_table::excludes(CLI::Option* a, CLI::Option* b) {
  a->excludes(b);
}

void option_table::rule(CLI::Option* option, std::string_view note, std::function<void()> check) {
  rules_.push_back({option, std::string(note), std::move(check)});
}

const option_table::option_meta& option_table::meta(const CLI::Option* o) const {
  static const option_meta none;
  for (const auto& b : bindings_) {
    if (b.option == o) return b.meta;
  }
  return none;
}

std::vector<std::string> option_table::notes_for(const CLI::Option* o) const {
  std::vector<std::string> out;
  for (const auto& r : rules_) {
    if (r.option == o && !r.note.empty()) out.push_back(r.note);
  }
  return out;
}

void option_table::apply() const {
  for (const auto& b : bindings_) {
    const auto& values = b.option->results();
    if (b.repeatable || values.size() < 2) continue;
    // The same value twice is harmless (a script that adds a default); two different ones are
    // a mistake whichever was meant.
    for (const auto& v : values) {
      if (v != values.front()) {
        throw usage_error(fmt::format("{} is given twice ('{}' and '{}'); give it once",
                                      option_name(b.option), values.front(), v));
      }
    }
  }
  for (const auto& r : rules_)
    r.check();
  for (const auto& b : bindings_) {
    if (b.option->count() == 0) continue;
    if (b.repeatable) {
      for (const auto& v : b.option->results())
        b.store(v);
    } else {
      b.store(b.option->results().back());
    }
  }
}

}  // namespace joules::options
