// `joules steps [FILE|-]`: what the step parser sees in a log, line by line, so that a user can
// check that `joules wrap` will find their trainer's steps before a three-day run.  Lines are
// numbered as an editor numbers them (split at \n only; a \r-rewritten progress bar is one line,
// of which the parser reads the last rewrite).

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "steps/step_parser.hpp"
#include "util/error.hpp"
#include "util/json_writer.hpp"

namespace joules::cli {
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

void append_text(std::string& out, std::uint64_t n, const steps::parsed_line& p) {
  const bool step = p.kind == steps::line_kind::step;
  std::string event(event_of(p));
  if (!p.phase.empty()) event = p.phase + " " + event;
  fmt::format_to(std::back_inserter(out), "{:>7}  {:>9}  {:>9}  {:>4}  {:<17}  {:<15}", n,
                 step ? fmt::to_string(p.step) : "-", p.total ? fmt::to_string(*p.total) : "-",
                 step ? fmt::to_string(p.step_gap) : "-", event,
                 p.format.empty() ? std::string_view("-") : p.format);
  // Seven significant digits for people: 13.86 ms is 0.01386 s, not the 0.013859999999999999 a
  // division by 1000 leaves (--json keeps every digit).
  for (const auto& m : p.metrics)
    fmt::format_to(std::back_inserter(out), "  {}={:.7g}", m.name, m.value);
  while (!out.empty() && out.back() == ' ')
    out.pop_back();
  out += '\n';
}

void append_json(std::string& out, std::uint64_t n, const steps::parsed_line& p) {
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
  w.end_object().end_object();
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

struct steps_settings {
  std::vector<std::string> step_regexes;
  bool json = false;
  bool only_steps = false;
};

int steps_main(const steps_settings& settings, const std::vector<std::string>& files) {
  if (files.size() > 1) {
    throw usage_error(
        fmt::format("joules steps reads one log, not {}; see joules steps --help", files.size()));
  }
  steps::step_parser parser(settings.step_regexes);
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
  summary sum;
  std::string out;
  if (!json) {
    fmt::format_to(std::back_inserter(out), "{:>7}  {:>9}  {:>9}  {:>4}  {:<17}  {:<15}  {}\n",
                   "line", "step", "total", "gap", "event", "format", "metrics");
  }
  std::string line;
  auto emit = [&] {
    const steps::parsed_line p = parser.parse(line);
    count(sum, p);
    if (!only_steps || p.kind != steps::line_kind::none) {
      json ? append_json(out, sum.lines, p) : append_text(out, sum.lines, p);
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

constexpr options::command_text kText{
    "steps", "show which lines of a training log are steps, phases and metrics",
    "[OPTIONS] [FILE|-]",
    "Reads a training log (FILE, or standard input when FILE is - or absent) and prints, for "
    "each line, what `joules wrap` would make of it: the line number, the step found (or -), the "
    "total, the steps since the previous step line (0: the same step again), the event (step, "
    "repeat, restart, eval begins, checkpoint ends, metrics, not-a-step, -), the format that "
    "recognised it, and the metrics parsed, in SI units. A summary line ends the output. Formats "
    "and rules: docs/step-formats.md.",
    "joules steps train.log\n"
    "python train.py 2>&1 | tee train.log | joules steps --only-steps\n"
    "joules steps --step-regex '^it (\\d+)/(?<total>\\d+)' --json train.log"};

class steps_command final : public options::command {
 public:
  const options::command_text& text() const override { return kText; }
  void declare(options::option_table& t) override {
    t.positional(options::positional_kind::files);
    t.repeated("step-regex", "RE",
               "An extra step format: a PCRE2 regular expression searched in each line; its first "
               "capture group is the step number, an optional group named total the total, e.g. "
               "'^it (\\d+) of (?<total>\\d+)'. Tried before the built-in formats.",
               [this](const std::string& v) { settings_.step_regexes.push_back(v); });
    t.flag("json", 0, "Print one JSON object per line (and a summary object) instead of text.",
           settings_.json);
    t.flag("only-steps", 0, "Print only the lines that are steps or start or end a phase.",
           settings_.only_steps);
  }
  int run(std::vector<std::string> positional) override {
    return steps_main(settings_, positional);
  }

 private:
  steps_settings settings_;
};

}  // namespace

std::unique_ptr<options::command> make_steps_command() {
  return std::make_unique<steps_command>();
}

}  // namespace joules::cli
