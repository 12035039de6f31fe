// Runs the step parser over real trainer output (tests/steps/corpus/*.log) and compares every
// line with its sidecar (*.expected.jsonl: one object per line that is a step or a phase;
// lines not listed are neither).  Prints recall and false steps per framework, and fails below
// 95 % recall or on any false step.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "steps/prefilter.hpp"
#include "steps/step_parser.hpp"

namespace {

namespace fs = std::filesystem;
using joules::steps::line_kind;
using joules::steps::parsed_line;
using joules::steps::step_parser;

struct tally {
  int step_lines = 0;
  int steps_found = 0;  // right kind, right step number, right gap where the sidecar gives one
  int false_steps = 0;  // a step where the sidecar has none or a phase
  int phase_lines = 0;
  int phases_found = 0;
  int false_phases = 0;
  int metric_errors = 0;
};

std::vector<std::string> read_lines(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line))
    lines.push_back(line);
  return lines;
}

std::map<int, nlohmann::json> read_expected(const fs::path& p) {
  std::map<int, nlohmann::json> out;
  std::ifstream in(p);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line);
    out[j.at("line").get<int>()] = j;
  }
  return out;
}

line_kind kind_of(const std::string& k) {
  if (k == "step") return line_kind::step;
  if (k == "phase_begin") return line_kind::phase_begin;
  if (k == "phase_end") return line_kind::phase_end;
  return line_kind::none;
}

bool metrics_match(const parsed_line& got, const nlohmann::json& want, std::string& why) {
  for (const auto& [name, value] : want.items()) {
    bool found = false;
    for (const auto& m : got.metrics) {
      if (m.name != name) continue;
      found = true;
      const double v = value.get<double>();
      if (std::abs(m.value - v) > 1e-9 * std::max(1.0, std::abs(v))) {
        why = name + "=" + std::to_string(m.value) + ", expected " + value.dump();
        return false;
      }
    }
    if (!found) {
      why = "no metric " + name;
      return false;
    }
  }
  return true;
}

tally run_file(const fs::path& log, std::ostringstream& problems) {
  tally t;
  const auto expected = read_expected(fs::path(log).replace_extension(".expected.jsonl"));
  const auto lines = read_lines(log);
  step_parser parser;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const int n = static_cast<int>(i) + 1;
    const parsed_line got = parser.parse(lines[i]);
    const auto it = expected.find(n);
    const line_kind want = it == expected.end() ? line_kind::none : kind_of(it->second.at("kind"));
    auto report = [&](const std::string& what) {
      problems << "  " << log.filename().string() << ":" << n << ": " << what << "\n";
    };
    if (want == line_kind::step) {
      ++t.step_lines;
      const auto& e = it->second;
      const bool ok =
          got.kind == line_kind::step && got.step == e.at("step").get<std::uint64_t>() &&
          (!e.contains("gap") || got.step_gap == e.at("gap").get<std::uint64_t>()) &&
          (!e.contains("restart") || got.counter_restarted == e.at("restart").get<bool>());
      if (ok) {
        ++t.steps_found;
      } else {
        report("missed step " + e.dump() + ": got " + std::string(to_string(got.kind)) + " " +
               std::to_string(got.step) + " gap " + std::to_string(got.step_gap));
      }
    } else if (want != line_kind::none) {
      ++t.phase_lines;
      if (got.kind == want && got.phase == it->second.at("phase").get<std::string>()) {
        ++t.phases_found;
      } else {
        report("missed phase " + it->second.dump() + ": got " + std::string(to_string(got.kind)));
      }
    }
    if (got.kind == line_kind::step && want != line_kind::step) {
      ++t.false_steps;
      report("false step " + std::to_string(got.step) + " (" + std::string(got.format) + ")");
    }
    if ((got.kind == line_kind::phase_begin || got.kind == line_kind::phase_end) &&
        want == line_kind::none) {
      ++t.false_phases;
      report("false phase " + got.phase + " (" + std::string(got.format) + ")");
    }
    if (it != expected.end() && it->second.contains("metrics")) {
      std::string why;
      if (!metrics_match(got, it->second.at("metrics"), why)) {
        ++t.metric_errors;
        report("metrics: " + why);
      }
    }
  }
  return t;
}

double percent(int num, int den) {
  return den == 0 ? 100.0 : 100.0 * num / den;
}

TEST(StepCorpus, RecallAndFalseStepsPerFramework) {
  const fs::path dir = JOULES_STEP_CORPUS;
  std::vector<fs::path> logs;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".log") logs.push_back(e.path());
  }
  std::sort(logs.begin(), logs.end());
  ASSERT_GE(logs.size(), 20u) << "corpus missing in " << dir;

  tally all;
  std::ostringstream problems;
  std::printf("%-16s %6s %6s %8s %6s %8s %7s\n", "framework", "steps", "found", "recall", "false",
              "phases", "f.phase");
  for (const auto& log : logs) {
    ASSERT_TRUE(fs::exists(fs::path(log).replace_extension(".expected.jsonl"))) << log;
    const tally t = run_file(log, problems);
    std::printf("%-16s %6d %6d %7.1f%% %6d %4d/%-3d %7d\n", log.stem().string().c_str(),
                t.step_lines, t.steps_found, percent(t.steps_found, t.step_lines), t.false_steps,
                t.phases_found, t.phase_lines, t.false_phases);
    all.step_lines += t.step_lines;
    all.steps_found += t.steps_found;
    all.false_steps += t.false_steps;
    all.phase_lines += t.phase_lines;
    all.phases_found += t.phases_found;
    all.false_phases += t.false_phases;
    all.metric_errors += t.metric_errors;
    EXPECT_GE(percent(t.steps_found, t.step_lines), 80.0) << log.filename();
  }
  std::printf("%-16s %6d %6d %7.1f%% %6d %4d/%-3d %7d\n", "all", all.step_lines, all.steps_found,
              percent(all.steps_found, all.step_lines), all.false_steps, all.phases_found,
              all.phase_lines, all.false_phases);
  if (!problems.str().empty()) std::printf("differences:\n%s", problems.str().c_str());
  EXPECT_GE(percent(all.steps_found, all.step_lines), 95.0);
  EXPECT_EQ(all.false_steps, 0);
  EXPECT_EQ(all.false_phases, 0);
  EXPECT_EQ(all.metric_errors, 0);
  EXPECT_GE(percent(all.phases_found, all.phase_lines), 90.0);
}

// The prefilter skips lines no format can match: every line of the corpus gets the same result
// with it as without it, and it does skip most of the corpus' lines that are not steps.
TEST(StepCorpus, PrefilterChangesNoResult) {
  int lines = 0;
  int skipped = 0;
  for (const auto& e : fs::directory_iterator(JOULES_STEP_CORPUS)) {
    if (e.path().extension() != ".log") continue;
    step_parser fast;
    step_parser reference({}, /*prefilter=*/false);
    int n = 0;
    for (const auto& line : read_lines(e.path())) {
      ++n;
      ++lines;
      const parsed_line a = fast.parse(line);
      const parsed_line b = reference.parse(line);
      EXPECT_TRUE(a == b) << e.path().filename().string() << ":" << n << ": " << line;
      if (!joules::steps::may_be_step_related(line)) {
        ++skipped;
        EXPECT_EQ(b.kind, line_kind::none) << line;
      }
    }
  }
  EXPECT_GT(lines, 500);
  EXPECT_GT(skipped, 0);
  std::printf("prefilter: %d of %d corpus lines skipped\n", skipped, lines);
}

}  // namespace
