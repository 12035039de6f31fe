#include "options/help.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "util/strings.hpp"

namespace joules::options {
namespace {

constexpr std::size_t kOptionColumn = 26;

std::string option_label(const declared_command& d, const CLI::Option* o) {
  std::string s = o->get_snames().empty()
                      ? fmt::format("    --{}", o->get_lnames().front())
                      : fmt::format("-{}, --{}", o->get_snames().front(), o->get_lnames().front());
  if (d.table->takes_value(o)) s += fmt::format(" {}", d.table->meta(o).value_name);
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

std::string names_of(const std::vector<CLI::Option*>& options) {
  std::string out;
  for (std::size_t i = 0; i < options.size(); ++i) {
    if (i > 0) out += i + 1 == options.size() ? " or " : ", ";
    out += option_name(options[i]);
  }
  return out;
}

// The option's help as --help and the man page show it: its text, its default, and what the
// declarations constrain.
std::string full_help(const declared_command& d, const CLI::Option* o) {
  const auto& meta = d.table->meta(o);
  std::string help = o->get_description();
  if (!meta.accepts.empty()) help += " " + meta.accepts;
  if (!o->get_default_str().empty()) help += fmt::format(" (default: {})", o->get_default_str());
  if (meta.repeatable) help += " Repeatable.";
  const auto needs = o->get_needs();
  if (!needs.empty()) {
    help += fmt::format(" Only with {}.", names_of({needs.begin(), needs.end()}));
  }
  const auto excludes = o->get_excludes();
  if (!excludes.empty()) {
    help += fmt::format(" Not with {}.", names_of({excludes.begin(), excludes.end()}));
  }
  for (const auto& note : d.table->notes_for(o))
    help += " " + note;
  return help;
}

// Options in declaration order, grouped by first appearance of their group.
std::vector<std::string> groups_of(const CLI::App& app) {
  std::vector<std::string> groups;
  for (const CLI::Option* o : app.get_options()) {
    if (std::find(groups.begin(), groups.end(), o->get_group()) == groups.end())
      groups.push_back(o->get_group());
  }
  return groups;
}

std::string troff_escape(std::string_view s) {
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
}

}  // namespace

std::string help_text(const declared_command& d, std::size_t width) {
  const command_text& t = d.cmd->text();
  std::string out =
      fmt::format("joules {}: {}\n\nUsage: joules {} {}\n", t.name, t.summary, t.name, t.usage);
  for (const auto& para : split(t.description, '\n')) {
    if (para.empty()) continue;
    out += '\n';
    out += wrap(para, 0, 0, width);
    out += '\n';
  }
  const CLI::App& app = *d.app;
  for (const auto& group : groups_of(app)) {
    out += fmt::format("\n{}:\n", group);
    for (const CLI::Option* o : app.get_options()) {
      if (o->get_group() != group) continue;
      const std::string label = "  " + option_label(d, o);
      if (label.size() + 2 > kOptionColumn) {
        out += label + "\n" + std::string(kOptionColumn, ' ');
      } else {
        out += label + std::string(kOptionColumn - label.size(), ' ');
      }
      out += wrap(full_help(d, o), kOptionColumn, kOptionColumn, width);
      out += '\n';
    }
  }
  if (!t.examples.empty()) {
    out += "\nExamples:\n";
    for (const auto& line : split(t.examples, '\n')) {
      if (!line.empty()) out += fmt::format("  {}\n", line);
    }
  }
  return out;
}

std::string top_help(std::span<const declared_command> commands) {
  std::string out = fmt::format(
      "joules {}: the energy of GPU workloads, per run, per step, per token\n\n"
      "Usage: joules COMMAND [OPTIONS] [ARGS...]\n\nCommands:\n",
      JOULES_VERSION);
  for (const auto& c : commands)
    out += fmt::format("  {:<12}{}\n", c.cmd->text().name, c.cmd->text().summary);
  out +=
      "\n  joules COMMAND --help              shows a command's options\n"
      "  joules --version                   prints the version\n"
      "  joules completion bash|zsh|fish    prints a completion script for that shell\n"
      "  joules manpage [COMMAND]           prints the man page of joules or of a command "
      "(troff)\n";
  return out;
}

std::string man_page(std::span<const declared_command> commands) {
  std::string out = fmt::format(
      ".TH JOULES 1 \"\" \"joules {}\" \"User Commands\"\n"
      ".SH NAME\njoules \\- energy of GPU workloads, per run, per step, per token\n"
      ".SH SYNOPSIS\n.B joules\n\\fICOMMAND\\fR [\\fIOPTIONS\\fR] [\\fIARGS\\fR...]\n"
      ".SH DESCRIPTION\njoules measures the energy of GPU workloads with no code changes: joules "
      "per run, per training step and per token, watts per GPU, and how every number was "
      "obtained. Each command has a page of its own.\n.SH COMMANDS\n",
      JOULES_VERSION);
  for (const auto& c : commands) {
    const command_text& t = c.cmd->text();
    out += fmt::format(".TP\n.BR joules\\-{} (1)\n{}\n", troff_escape(t.name),
                       troff_escape(t.summary));
  }
  out +=
      ".SH EXIT STATUS\n0 on success; a measured command's own status (128+N after signal N); 2 "
      "for bad options; 125 when joules cannot measure.\n.SH SEE ALSO\n";
  for (std::size_t i = 0; i < commands.size(); ++i) {
    out += fmt::format("{}.BR joules\\-{} (1)", i == 0 ? "" : ",\n",
                       troff_escape(commands[i].cmd->text().name));
  }
  out += "\n";
  return out;
}

std::string man_page(const declared_command& c) {
  const command_text& t = c.cmd->text();
  std::string out = fmt::format(
      ".TH JOULES\\-{} 1 \"\" \"joules {}\" \"User Commands\"\n.SH NAME\njoules\\-{} \\- "
      "{}\n.SH SYNOPSIS\n.B joules {}\n{}\n.SH DESCRIPTION\n",
      troff_escape(t.name), JOULES_VERSION, troff_escape(t.name), troff_escape(t.summary),
      troff_escape(t.name), troff_escape(t.usage));
  bool first = true;
  for (const auto& para : split(t.description, '\n')) {
    if (para.empty()) continue;
    out += fmt::format("{}{}\n", first ? "" : ".PP\n", troff_escape(para));
    first = false;
  }
  out += ".SH OPTIONS\n";
  for (const auto& group : groups_of(*c.app)) {
    out += fmt::format(".SS {}\n", troff_escape(group));
    for (const CLI::Option* o : c.app->get_options()) {
      if (o->get_group() != group) continue;
      const bool value = c.table->takes_value(o);
      const std::string shorts =
          o->get_snames().empty() ? "" : fmt::format("\\-{}, ", o->get_snames().front());
      out +=
          fmt::format(".TP\n.B {}\\-\\-{}{}\n{}\n", shorts, troff_escape(o->get_lnames().front()),
                      value ? fmt::format(" \\fI{}\\fR", c.table->meta(o).value_name) : "",
                      troff_escape(full_help(c, o)));
    }
  }
  if (!t.examples.empty()) {
    out += ".SH EXAMPLES\n.nf\n";
    for (const auto& line : split(t.examples, '\n')) {
      if (!line.empty()) out += troff_escape(line) + "\n";
    }
    out += ".fi\n";
  }
  out += ".SH SEE ALSO\n.BR joules (1)\n";
  return out;
}

}  // namespace joules::options
