#include "cli/options.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "util/error.hpp"
#include "util/strings.hpp"

namespace joules::cli {
namespace {

constexpr std::size_t kHelpWidth = 100;
constexpr std::size_t kOptionColumn = 26;

const option_spec* find_long(const command_spec& spec, std::string_view name) {
  for (const auto& o : spec.options) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

const option_spec* find_short(const command_spec& spec, char c) {
  for (const auto& o : spec.options) {
    if (o.short_name == c) return &o;
  }
  return nullptr;
}

std::string option_label(const option_spec& o) {
  std::string s = o.short_name != 0 ? fmt::format("-{}, --{}", o.short_name, o.name)
                                    : fmt::format("    --{}", o.name);
  if (!o.value_name.empty()) s += fmt::format(" {}", o.value_name);
  return s;
}

// Words of `text` wrapped to `width`; `col` is where the first word starts, and every further
// line is indented to `indent`.
std::string wrap(std::string_view text, std::size_t indent, std::size_t col, std::size_t width) {
  std::string out;
  bool first = true;
  for (const auto& word : split(text, ' ')) {
    if (word.empty()) continue;
    if (!first && col + 1 + word.size() > width) {
      out += '\n';
      out.append(indent, ' ');
      col = indent;
    } else if (!first) {
      out += ' ';
      ++col;
    }
    out += word;
    col += word.size();
    first = false;
  }
  return out;
}

std::string unknown_option(const command_spec& spec, std::string_view arg) {
  return fmt::format("unknown option '{}' for joules {}; see joules {} --help", arg, spec.name,
                     spec.name);
}

}  // namespace

std::optional<std::string> parsed_args::get(std::string_view name) const {
  auto it = values_.find(name);
  if (it == values_.end() || it->second.empty()) return std::nullopt;
  return it->second.back();
}

std::vector<std::string> parsed_args::all(std::string_view name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

parsed_args parse(const command_spec& spec, std::span<const std::string> args) {
  parsed_args out;
  std::size_t i = 0;
  auto take_value = [&](const option_spec& o, std::optional<std::string> inline_value) {
    if (inline_value) return *inline_value;
    if (i + 1 >= args.size()) {
      throw usage_error(fmt::format("--{} needs a value ({}); see joules {} --help", o.name,
                                    o.value_name, spec.name));
    }
    // `--region -- cmd` is a forgotten value, not a region named "--": taking it would also
    // swallow the separator and run "cmd" as if it were an option.  Likewise `--output --json`.
    const std::string& next = args[i + 1];
    if (next == "--") {
      throw usage_error(fmt::format("--{} needs a value ({}) before '--'; see joules {} --help",
                                    o.name, o.value_name, spec.name));
    }
    if (next.starts_with("--") &&
        find_long(spec, std::string_view(next).substr(2, next.find('=') - 2)) != nullptr) {
      throw usage_error(
          fmt::format("--{} needs a value ({}), not the option '{}'; see joules {} --help", o.name,
                      o.value_name, next, spec.name));
    }
    return args[++i];
  };
  auto store = [&](const option_spec& o, std::string value) {
    auto& slot = out.values_[std::string(o.name)];
    if (!slot.empty() && !o.repeatable && !o.value_name.empty() && slot.back() != value) {
      throw usage_error(fmt::format("--{} is given twice ('{}' and '{}'); give it once", o.name,
                                    slot.back(), value));
    }
    slot.push_back(std::move(value));
  };
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.size() > 2 && a.starts_with("--")) {
      const std::string_view body = std::string_view(a).substr(2);
      const auto eq = body.find('=');
      const std::string_view name = body.substr(0, eq);
      const option_spec* o = find_long(spec, name);
      if (o == nullptr) throw usage_error(unknown_option(spec, a));
      std::optional<std::string> inline_value;
      if (eq != std::string_view::npos) inline_value = std::string(body.substr(eq + 1));
      if (o->value_name.empty()) {
        if (inline_value)
          throw usage_error(fmt::format("--{} takes no value (got '{}')", o->name, *inline_value));
        store(*o, "");
      } else {
        store(*o, take_value(*o, inline_value));
      }
      continue;
    }
    if (a.size() >= 2 && a[0] == '-' && a[1] != '-') {
      // Short options: -h; a value follows as the next argument or attached (-o FILE, -oFILE).
      const option_spec* o = find_short(spec, a[1]);
      if (o == nullptr) throw usage_error(unknown_option(spec, a));
      if (o->value_name.empty()) {
        if (a.size() > 2) throw usage_error(unknown_option(spec, a));
        store(*o, "");
      } else {
        store(*o, take_value(*o, a.size() > 2 ? std::optional(a.substr(2)) : std::nullopt));
      }
      continue;
    }
    break;  // the first positional argument
  }
  for (; i < args.size(); ++i)
    out.positional_.push_back(args[i]);
  if (out.has("help")) return out;
  if (spec.positional == positional_kind::none && !out.positional_.empty()) {
    throw usage_error(fmt::format("joules {} takes no argument '{}'; see joules {} --help",
                                  spec.name, out.positional_.front(), spec.name));
  }
  return out;
}

std::string help_text(const command_spec& spec) {
  std::string out = fmt::format("joules {}: {}\n\nUsage: joules {} {}\n", spec.name, spec.summary,
                                spec.name, spec.usage);
  for (const auto& para : split(spec.description, '\n')) {
    if (para.empty()) continue;
    out += '\n';
    out += wrap(para, 0, 0, kHelpWidth);
    out += '\n';
  }
  std::vector<std::string_view> groups;
  for (const auto& o : spec.options) {
    if (std::find(groups.begin(), groups.end(), o.group) == groups.end()) groups.push_back(o.group);
  }
  for (const auto group : groups) {
    out += fmt::format("\n{}:\n", group.empty() ? "Options" : group);
    for (const auto& o : spec.options) {
      if (o.group != group) continue;
      std::string label = "  " + option_label(o);
      std::string help(o.help);
      if (!o.default_text.empty()) help += fmt::format(" (default: {})", o.default_text);
      if (o.repeatable) help += " Repeatable.";
      if (label.size() + 2 > kOptionColumn) {
        out += label + "\n" + std::string(kOptionColumn, ' ');
      } else {
        out += label + std::string(kOptionColumn - label.size(), ' ');
      }
      out += wrap(help, kOptionColumn, kOptionColumn, kHelpWidth);
      out += '\n';
    }
  }
  if (!spec.examples.empty()) {
    out += "\nExamples:\n";
    for (const auto& line : split(spec.examples, '\n')) {
      if (!line.empty()) out += fmt::format("  {}\n", line);
    }
  }
  return out;
}

std::string man_page(std::span<const command_spec* const> commands) {
  auto escape = [](std::string_view s) {
    std::string o;
    for (char c : s) {
      if (c == '\\') {
        o += "\\e";
      } else if (c == '-') {
        o += "\\-";
      } else {
        o += c;
      }
    }
    // A line starting with . or ' would be a troff request.
    if (!o.empty() && (o[0] == '.' || o[0] == '\'')) o.insert(0, "\\&");
    return o;
  };
  std::string out =
      ".TH JOULES 1\n.SH NAME\njoules \\- energy of GPU workloads, per run, per step, per token\n"
      ".SH SYNOPSIS\n.B joules\n\\fICOMMAND\\fR [\\fIOPTIONS\\fR]\n.SH COMMANDS\n";
  for (const auto* c : commands) {
    out += fmt::format(".SS joules {} {}\n{}\n", c->name, escape(c->usage), escape(c->summary));
    for (const auto& para : split(c->description, '\n')) {
      if (!para.empty()) out += fmt::format(".PP\n{}\n", escape(para));
    }
    for (const auto& o : c->options) {
      out += fmt::format(".TP\n.B \\-\\-{}{}\n{}", escape(o.name),
                         o.value_name.empty() ? "" : fmt::format(" \\fI{}\\fR", o.value_name),
                         escape(o.help));
      if (!o.default_text.empty()) out += fmt::format(" (default: {})", escape(o.default_text));
      out += '\n';
    }
  }
  return out;
}

std::string bash_completion(std::span<const command_spec* const> commands) {
  std::string names;
  std::string cases;
  for (const auto* c : commands) {
    names += fmt::format("{} ", c->name);
    std::string opts;
    for (const auto& o : c->options)
      opts += fmt::format("--{} ", o.name);
    cases += fmt::format("    {}) opts=\"{}\" ;;\n", c->name, trim(opts));
  }
  return fmt::format(
      "# bash completion for joules, generated by `joules completion bash`\n"
      "_joules() {{\n"
      "  local cur=${{COMP_WORDS[COMP_CWORD]}} opts\n"
      "  if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
      "    COMPREPLY=($(compgen -W \"{} --help --version\" -- \"$cur\")); return\n"
      "  fi\n"
      "  case ${{COMP_WORDS[1]}} in\n{}"
      "    *) opts=\"\" ;;\n"
      "  esac\n"
      "  if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"));\n"
      "  else COMPREPLY=($(compgen -c -- \"$cur\")); fi\n"
      "}}\n"
      "complete -F _joules joules\n",
      trim(names), cases);
}

}  // namespace joules::cli
