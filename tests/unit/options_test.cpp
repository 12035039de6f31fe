#include "cli/options.hpp"

#include <gtest/gtest.h>

#include "cli/commands.hpp"
#include "cli/measure.hpp"
#include "util/error.hpp"

namespace joules::cli {
namespace {

parsed_args parse_run(std::vector<std::string> args) {
  return parse(run_spec(), args);
}

TEST(Options, OptionsThenTheCommandUntouched) {
  const auto a = parse_run(
      {"--interval", "50", "--label=a=b", "--label", "c=d", "python", "-u", "--interval", "x"});
  EXPECT_EQ(a.get("interval"), "50");
  EXPECT_EQ(a.all("label"), (std::vector<std::string>{"a=b", "c=d"}));
  EXPECT_EQ(a.positional(), (std::vector<std::string>{"python", "-u", "--interval", "x"}));
}

TEST(Options, DoubleDashEndsOptions) {
  const auto a = parse_run({"-q", "--", "--weird-program", "--help"});
  EXPECT_TRUE(a.has("quiet"));
  EXPECT_FALSE(a.has("help"));
  EXPECT_EQ(a.positional(), (std::vector<std::string>{"--weird-program", "--help"}));
}

TEST(Options, ShortOptionsTakeAttachedOrSeparateValues) {
  EXPECT_EQ(parse_run({"-o", "x.jsonl", "true"}).get("output"), "x.jsonl");
  EXPECT_EQ(parse_run({"-ox.jsonl", "true"}).get("output"), "x.jsonl");
}

void expect_error(std::vector<std::string> args, const std::string& fragment) {
  try {
    (void)read_measure_settings(parse_run(std::move(args)), "run");
    ADD_FAILURE() << "no error";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Options, BadInputNamesTheValueAndWhatIsAccepted) {
  expect_error({"--frobnicate", "true"}, "unknown option '--frobnicate' for joules run");
  expect_error({"--interval"}, "--interval needs a value (MS)");
  expect_error({"--interval", "0", "true"},
               "--interval '0': expected a whole number of milliseconds from 1 to 60000");
  expect_error({"--interval", "1.5", "true"}, "--interval '1.5'");
  expect_error({"--label", "=x", "true"}, "--label '=x': expected KEY=VALUE");
  expect_error({"--label", "novalue", "true"}, "--label 'novalue': expected KEY=VALUE");
  expect_error({"--label", "1a=x", "true"}, "--label '1a=x'");
  expect_error({"--label", "run_id=x", "true"}, "run_id is set by joules itself; use --run-id");
  expect_error({"--label", "a=1", "--label", "a=2", "true"}, "label a is given twice");
  expect_error({"--backend", "cuda", "true"}, "--backend 'cuda': expected auto, nvml or sim");
  expect_error({"--sim-gpus", "4", "true"}, "--sim-gpus applies only with --backend sim");
  expect_error({"--backend", "sim", "--sim-gpus", "0", "true"}, "--sim-gpus '0'");
  expect_error({"--backend", "sim", "--sim-profile", "busy", "true"}, "--sim-profile 'busy'");
  expect_error({"--append", "true"}, "--append needs --output FILE");
  expect_error({"--json", "--output", "x", "true"}, "--json and --output both set");
  expect_error({"--run-id", "has space", "true"}, "--run-id 'has space'");
  expect_error({"--interval", "10", "--interval", "20", "true"}, "--interval is given twice");
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
  // Every option that takes a value of run's table refuses both.
  for (const auto& o : run_spec().options) {
    if (o.value_name.empty()) continue;
    const std::string name = "--" + std::string(o.name);
    expect_error({name, "--", "true"}, name + " needs a value");
    expect_error({name, "--quiet", "true"}, name + " needs a value");
  }
  // A value that merely starts with dashes, or is given with '=', is the option's value.
  EXPECT_EQ(parse_run({"--output=--", "true"}).get("output"), "--");
  EXPECT_EQ(parse_run({"--label", "--x=1", "true"}).get("label"), "--x=1");
  const auto a = parse_run({"--region", "DE", "--", "sh", "-c", "true"});
  EXPECT_EQ(a.get("region"), "DE");
  EXPECT_EQ(a.positional(), (std::vector<std::string>{"sh", "-c", "true"}));
}

TEST(Options, HelpListsEveryOptionOfTheTable) {
  const std::string help = help_text(run_spec());
  for (const auto& o : run_spec().options) {
    EXPECT_NE(help.find("--" + std::string(o.name)), std::string::npos) << o.name;
  }
  EXPECT_NE(help.find("(default: 100; 20 when a GPU has no energy counter)"), std::string::npos);
  for (const auto& line : [&] {
         std::vector<std::string> lines;
         std::string cur;
         for (char c : help) {
           if (c == '\n') {
             lines.push_back(cur);
             cur.clear();
           } else {
             cur += c;
           }
         }
         return lines;
       }()) {
    EXPECT_LE(line.size(), 100U) << line;
  }
}

TEST(Options, ManPageAndCompletionComeFromTheSameTables) {
  const std::string man = man_page(all_commands());
  const std::string bash = bash_completion(all_commands());
  for (const auto* c : all_commands()) {
    for (const auto& o : c->options) {
      // troff escapes every hyphen: --no-pty is \-\-no\-pty.
      std::string escaped = "\\-\\-";
      for (const char ch : o.name)
        escaped += ch == '-' ? std::string("\\-") : std::string(1, ch);
      EXPECT_NE(man.find(escaped), std::string::npos) << o.name;
      EXPECT_NE(bash.find("--" + std::string(o.name)), std::string::npos) << o.name;
    }
  }
}

}  // namespace
}  // namespace joules::cli
