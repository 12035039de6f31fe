// The command line: options declared on CLI11 apps (src/cli/option_table.hpp), read by
// src/cli/parse.cpp, and the help, man page and completions made from the same declarations.

#include <gtest/gtest.h>

#include "cli/commands.hpp"
#include "options/completion.hpp"
#include "options/help.hpp"
#include "options/parse.hpp"
#include "options/suggest.hpp"
#include "util/error.hpp"

namespace joules::options {
namespace {

using cli::make_commands;
using cli::make_run_command;

struct parsed {
  declared_command d;
  parse_result r;
  std::vector<std::string> values(const std::string& name) const {
    return d.app->get_option(name)->results();
  }
};

parsed parse_run(std::vector<std::string> args) {
  parsed p{declare(make_run_command()), {}};
  p.r = parse(p.d, args);
  return p;
}

TEST(Options, OptionsThenTheCommandUntouched) {
  const auto a = parse_run(
      {"--interval", "50", "--label=a=b", "--label", "c=d", "python", "-u", "--interval", "x"});
  EXPECT_EQ(a.values("--interval"), (std::vector<std::string>{"50"}));
  EXPECT_EQ(a.values("--label"), (std::vector<std::string>{"a=b", "c=d"}));
  EXPECT_EQ(a.r.positional, (std::vector<std::string>{"python", "-u", "--interval", "x"}));
}

TEST(Options, DoubleDashEndsOptions) {
  const auto a = parse_run({"-q", "--", "--weird-program", "--help"});
  EXPECT_EQ(a.d.app->get_option("--quiet")->count(), 1U);
  EXPECT_FALSE(a.r.help);
  EXPECT_EQ(a.r.positional, (std::vector<std::string>{"--weird-program", "--help"}));
}

TEST(Options, ShortOptionsTakeAttachedOrSeparateValues) {
  EXPECT_EQ(parse_run({"-o", "x.jsonl", "true"}).values("--output"),
            (std::vector<std::string>{"x.jsonl"}));
  EXPECT_EQ(parse_run({"-ox.jsonl", "true"}).values("--output"),
            (std::vector<std::string>{"x.jsonl"}));
}

TEST(Options, TyposGetTheClosestName) {
  const std::vector<std::string> commands = {"run", "wrap", "steps", "monitor", "doctor", "serve"};
  EXPECT_EQ(closest("wrapp", commands), "wrap");
  EXPECT_EQ(closest("moniter", commands), "monitor");
  EXPECT_EQ(closest("srve", commands), "serve");
  EXPECT_EQ(closest("xyzzy", commands), std::nullopt);
  const std::vector<std::string> opts = {"--interval", "--otlp-interval", "--output", "--sim-gpus",
                                         "--sim-model"};
  EXPECT_EQ(closest("--interval-ms", opts), "--interval");
  EXPECT_EQ(closest("--inter", opts), "--interval");
  EXPECT_EQ(closest("--outptu", opts), "--output");
  EXPECT_EQ(closest("--sim", opts), std::nullopt);  // two options start with it
  EXPECT_EQ(edit_distance("abc", "acb"), 1U);
}

TEST(Options, HelpWinsOverEverythingElse) {
  EXPECT_TRUE(parse_run({"--interval", "0", "--help"}).r.help);
  EXPECT_TRUE(parse_run({"-h"}).r.help);
}

void expect_error(std::vector<std::string> args, const std::string& fragment) {
  try {
    auto p = parse_run(std::move(args));
    // The command's own checks (the command to run, the run id) come when it runs; none of
    // these inputs gets that far without an error.
    (void)p.d.cmd->run(p.r.positional);
    ADD_FAILURE() << "no error";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Options, BadInputNamesTheValueAndWhatIsAccepted) {
  expect_error({"--frobnicate", "true"}, "unknown option '--frobnicate' for joules run");
  expect_error({"--intervl", "5", "true"},
               "unknown option '--intervl' for joules run (did you mean --interval?)");
  expect_error({"--backend", "simm", "true"},
               "expected auto, nvml, amdsmi, levelzero, hlml or sim (did you mean sim?)");
  expect_error({"--interval"}, "--interval needs a value (MS)");
  expect_error({"--interval", "0", "true"},
               "--interval '0': expected a whole number of milliseconds from 1 to 60000");
  expect_error({"--interval", "1.5", "true"}, "--interval '1.5'");
  expect_error({"--label", "=x", "true"}, "--label '=x': expected KEY=VALUE");
  expect_error({"--label", "novalue", "true"}, "--label 'novalue': expected KEY=VALUE");
  expect_error({"--label", "1a=x", "true"}, "--label '1a=x'");
  expect_error({"--label", "run_id=x", "true"}, "run_id is set by joules itself; use --run-id");
  expect_error({"--label", "a=1", "--label", "a=2", "true"}, "label a is given twice");
  expect_error({"--backend", "cuda", "true"},
               "--backend 'cuda': expected auto, nvml, amdsmi, levelzero, hlml or sim");
  expect_error({"--sim-gpus", "4", "true"}, "--sim-gpus applies only with --backend sim");
  expect_error({"--backend", "sim", "--sim-gpus", "0", "true"}, "--sim-gpus '0'");
  expect_error({"--backend", "sim", "--sim-profile", "busy", "true"}, "--sim-profile 'busy'");
  expect_error({"--append", "true"}, "--append applies only with --output");
  expect_error({"--json", "--output", "x", "true"}, "--output and --json both set: choose one");
  expect_error({"--run-id", "has space", "true"}, "--run-id 'has space'");
  expect_error({"--interval", "10", "--interval", "20", "true"}, "--interval is given twice");
  expect_error({"--json=1", "true"}, "--json takes no value (got '1')");
  expect_error({"--otlp-interval", "500", "true"}, "--otlp-interval applies only with --otlp");
  expect_error({}, "joules run needs a command to run");
}

TEST(Options, AValueIsNeverTheSeparatorNorAnotherOption) {
  // `--region -- cmd`: "--" is not a region, and taking it would run "cmd" as an option.
  expect_error({"--region", "--", "true"}, "--region needs a value (REGION) before '--'");
  expect_error({"--interval", "--", "true"}, "--interval needs a value (MS) before '--'");
  expect_error({"-o", "--", "true"}, "--output needs a value (FILE) before '--'");
  expect_error({"--output", "--json", "true"},
               "--output needs a value (FILE), not the option '--json'");
  expect_error({"--pue", "--region=DE", "true"},
               "--pue needs a value (X), not the option '--region=DE'");
  // Every option of run that takes a value refuses both.
  const auto d = declare(make_run_command());
  for (const CLI::Option* o : d.app->get_options()) {
    if (!d.table->takes_value(o)) continue;
    const std::string name = option_name(o);
    expect_error({name, "--", "true"}, name + " needs a value");
    expect_error({name, "--quiet", "true"}, name + " needs a value");
  }
  // A value that merely starts with dashes, or is given with '=', is the option's value.
  EXPECT_EQ(parse_run({"--output=--", "true"}).values("--output"),
            (std::vector<std::string>{"--"}));
  EXPECT_EQ(parse_run({"--run-id", "--x=1", "true"}).values("--run-id"),
            (std::vector<std::string>{"--x=1"}));
  const auto a = parse_run({"--region", "DE", "--", "sh", "-c", "true"});
  EXPECT_EQ(a.values("--region"), (std::vector<std::string>{"DE"}));
  EXPECT_EQ(a.r.positional, (std::vector<std::string>{"sh", "-c", "true"}));
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::string cur;
  for (char c : text) {
    if (c == '\n') {
      lines.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  return lines;
}

TEST(Options, HelpListsEveryOptionWithItsConstraints) {
  for (auto& c : make_commands()) {
    const auto d = declare(std::move(c));
    const std::string help = help_text(d);
    for (const CLI::Option* o : d.app->get_options()) {
      EXPECT_NE(help.find(option_name(o)), std::string::npos) << option_name(o);
    }
    for (const auto& line : lines_of(help))
      EXPECT_LE(line.size(), kHelpWidth) << line;
  }
  // The help as words, whatever the line breaks.
  std::string run;
  for (const char c : help_text(declare(make_run_command()))) {
    const bool space = c == ' ' || c == '\n';
    if (!space || (!run.empty() && run.back() != ' ')) run += space ? ' ' : c;
  }
  EXPECT_NE(run.find("(default: 100; 20 when a GPU has no energy counter)"), std::string::npos);
  EXPECT_NE(run.find("From 1 to 60000."), std::string::npos);
  EXPECT_NE(run.find("One of auto, nvml, amdsmi, levelzero, hlml or sim."), std::string::npos);
  EXPECT_NE(run.find("Only with --backend sim."), std::string::npos);
  EXPECT_NE(run.find("Only with --otlp."), std::string::npos);
}

TEST(Options, ManPageAndCompletionComeFromTheSameDeclarations) {
  std::vector<declared_command> all;
  for (auto& c : make_commands())
    all.push_back(declare(std::move(c)));
  const std::string bash = bash_completion(all);
  const std::string zsh = zsh_completion(all);
  const std::string fish = fish_completion(all);
  EXPECT_NE(man_page(all).find(".BR joules\\-wrap (1)"), std::string::npos);
  for (const auto& d : all) {
    const std::string man = man_page(d);
    for (const CLI::Option* o : d.app->get_options()) {
      const std::string name = o->get_lnames().front();
      // troff escapes every hyphen: --no-pty is \-\-no\-pty.
      std::string escaped = "\\-\\-";
      for (const char ch : name)
        escaped += ch == '-' ? std::string("\\-") : std::string(1, ch);
      EXPECT_NE(man.find(escaped), std::string::npos) << name;
      EXPECT_NE(bash.find("--" + name), std::string::npos) << name;
      EXPECT_NE(zsh.find("--" + name), std::string::npos) << name;
      EXPECT_NE(fish.find("-l " + name), std::string::npos) << name;
    }
  }
}

}  // namespace
}  // namespace joules::options
