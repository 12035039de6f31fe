// `joules steps [FILE|-]`: what the step parser sees in a log, line by line, so that a user can
// check that `joules wrap` will find their trainer's steps before a three-day run.  Lines are
// numbered as an editor numbers them (split at \n only; a \r-rewritten progress bar is one
// line, whose rewrites the parser reads as a terminal would show them).

#include "session/steps.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "steps/step_parser.hpp"
#include "util/error.hpp"
#include "util/json_writer.hpp"

namespace joules::session {
namespace {

// Longer lines are parsed by their first 64 KiB: step numbers and metrics come first.
constexpr std::size_t kMaxLine = 64 * 1024;
constexpr std::size_t kFlushAt = 64 * 1024;

struct summary {
  std::uint64_t lines = 0;
  std::uint64_t step_lines = 0;
  std::uint64_t new_steps = 0;
  std::uint64_t repeats = 0;
  std::uint64_t restarts = 0;
  std::uint64_t phase_lines = 0;
  std::map<std::string, std::uint64_t, std::less<>> formats;  // of step and phase lines
};

std::string_view event_of(const steps::parsed_line& p) {
  switch (p.kind) {
    case steps::line_kind::step:
      if (p.step_gap == 0) return "repeat";
      return p.counter_restarted ? "restart" : "step";
    case steps::line_kind::phase_begin:
      return "begins";
    case steps::line_kind::phase_end:
      return "ends";
    case steps::line_kind::none:
      break;
  }
  if (!p.metrics.empty()) return "metrics";
  return p.format.empty() ? "-" : "not-a-step";
}

void append_text(std::string& out, std::uint64_t n, const steps::parsed_line& p,
                 const std::string* why) {
  const bool step = p.kind == steps::line_kind::step;
  std::string event(event_of(p));
  if (!p.phase.empty()) event = p.phase + " " + event;
  fmt::format_to(std::back_inserter(out), "{:>7}  {:>9}  {:>9}  {:>4}  {:<17}  {:<15}", n,
                 step ? fmt::to_string(p.step) : "-", p.total ? fmt::to_string(*p.total) : "-",
                 step ? fmt::to_string(p.step_gap) : "-", event,
                 p.format.empty() ? std::string_view("-") : p.format);
  for (const auto& m : p.metrics) {
    out += "  ";
    out += m.name;
    out += '=';
    append_json_number(out, m.value);
  }
  while (!out.empty() && out.back() == ' ')
    out.pop_back();
  out += '\n';
  if (why != nullptr) fmt::format_to(std::back_inserter(out), "{:>7}  why: {}\n", "", *why);
}

void append_json(std::string& out, std::uint64_t n, const steps::parsed_line& p,
                 const std::string* why) {
  json_writer w;
  w.begin_object().field("type", "line").field("line", n).field("kind", steps::to_string(p.kind));
  if (p.kind == steps::line_kind::step) {
    w.field("step", p.step).field("step_gap", p.step_gap);
    w.field("counter_restarted", p.counter_restarted);
    if (p.epoch) w.field("epoch", p.epoch).field("epochs", p.epochs);
  }
  w.field("total", p.total);
  if (!p.phase.empty()) w.field("phase", p.phase);
  if (!p.format.empty()) w.field("format", p.format);
  w.key("metrics").begin_object();
  for (const auto& m : p.metrics)
    w.field(m.name, m.value);
  w.end_object();
  if (why != nullptr) w.field("why", *why);
  w.end_object();
  out += w.str();
  out += '\n';
}

void count(summary& s, const steps::parsed_line& p) {
  ++s.lines;
  if (p.kind == steps::line_kind::none) return;
  if (p.kind == steps::line_kind::step) {
    ++s.step_lines;
    if (p.step_gap == 0) {
      ++s.repeats;
    } else {
      ++s.new_steps;
      if (p.counter_restarted) ++s.restarts;
    }
  } else {
    ++s.phase_lines;
  }
  ++s.formats[std::string(p.format)];
}

void append_summary(std::string& out, const summary& s, bool json) {
  if (json) {
    json_writer w;
    w.begin_object().field("type", "summary").field("lines", s.lines);
    w.field("step_lines", s.step_lines).field("new_steps", s.new_steps);
    w.field("repeated_steps", s.repeats).field("restarts", s.restarts);
    w.field("phase_lines", s.phase_lines).key("formats").begin_object();
    for (const auto& [name, n] : s.formats)
      w.field(name, n);
    w.end_object().end_object();
    out += w.str();
    out += '\n';
    return;
  }
  fmt::format_to(std::back_inserter(out),
                 "joules steps: {} lines, {} step lines ({} new, {} repeated, {} restarts), {} "
                 "phase lines; formats:",
                 s.lines, s.step_lines, s.new_steps, s.repeats, s.restarts, s.phase_lines);
  if (s.formats.empty()) out += " none";
  for (const auto& [name, n] : s.formats)
    fmt::format_to(std::back_inserter(out), " {} {}", name, n);
  out += '\n';
}

void write_out(std::string& out) {
  if (!out.empty()) std::fwrite(out.data(), 1, out.size(), stdout);
  out.clear();
}

}  // namespace

int show_steps(const steps_settings& settings, const std::vector<std::string>& files) {
  if (files.size() > 1) {
    throw usage_error(
        fmt::format("joules steps reads one log, not {}; see joules steps --help", files.size()));
  }
  steps::parser_options options;
  options.custom = settings.step_regexes;
  for (const auto& name : settings.rules_off) {
    const auto r = steps::rule_of_format(name);
    if (!r) {
      std::string names;
      for (std::size_t i = 0; i < steps::kRuleCount; ++i)
        names +=
            fmt::format("{}{}", i == 0 ? "" : ", ", steps::rule_name(static_cast<steps::rule>(i)));
      throw usage_error(fmt::format("--rule-off {}: no such rule; the rules are {}", name, names));
    }
    options.rules.disable(*r);
  }
  steps::step_parser parser(std::move(options));
  const std::string path = files.empty() ? "-" : files.front();
  std::FILE* in = stdin;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> owned(nullptr, std::fclose);
  if (path != "-") {
    owned.reset(std::fopen(path.c_str(), "rb"));
    if (!owned) {
      throw usage_error(
          fmt::format("cannot read {}: {}; give a readable log file or - for standard input", path,
                      std::strerror(errno)));
    }
    in = owned.get();
  }
  const bool json = settings.json;
  const bool only_steps = settings.only_steps;
  const bool explain = settings.explain;
  std::string why;
  summary sum;
  std::string out;
  if (!json) {
    fmt::format_to(std::back_inserter(out), "{:>7}  {:>9}  {:>9}  {:>4}  {:<17}  {:<15}  {}\n",
                   "line", "step", "total", "gap", "event", "format", "metrics");
  }
  std::string line;
  auto emit = [&] {
    const steps::parsed_line p = explain ? parser.parse(line, why) : parser.parse(line);
    count(sum, p);
    if (!only_steps || p.kind != steps::line_kind::none) {
      const std::string* w = explain ? &why : nullptr;
      json ? append_json(out, sum.lines, p, w) : append_text(out, sum.lines, p, w);
    }
    if (out.size() >= kFlushAt) write_out(out);
    line.clear();
  };
  std::vector<char> buf(64 * 1024);
  bool pending = false;  // bytes of an unterminated line were read
  while (true) {
    const std::size_t n = std::fread(buf.data(), 1, buf.size(), in);
    for (std::size_t i = 0; i < n; ++i) {
      const char c = buf[i];
      if (c == '\n') {
        emit();
        pending = false;
        continue;
      }
      pending = true;
      if (line.size() < kMaxLine) line.push_back(c);
    }
    if (n < buf.size()) break;
  }
  if (std::ferror(in)) {
    throw usage_error(fmt::format("cannot read {}: {}", path == "-" ? "standard input" : path,
                                  std::strerror(errno)));
  }
  if (pending) emit();
  append_summary(out, sum, json);
  write_out(out);
  std::fflush(stdout);
  return 0;
}

}  // namespace joules::session
