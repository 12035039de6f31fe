// step_windows: which window each stretch of a wrapped run belongs to, fed by the real parser.
#include "windows/step_windows.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "steps/step_parser.hpp"

namespace joules {
namespace {

const mono_time kStart = steady::now();

// The n-th line's instant: every line a millisecond after the one before.
mono_time at(std::uint64_t n) {
  return kStart + std::chrono::milliseconds(n);
}

// Feeds lines; returns the labels of the windows closed, in order, after the run's end.
std::vector<window_label> windows_of(const std::vector<std::string>& lines) {
  steps::step_parser parser;
  step_windows w;
  std::uint64_t n = 0;
  for (const auto& line : lines) {
    ++n;
    w.on_line(parser.parse(line), n, at(n));
  }
  w.on_exit();
  std::vector<window_label> out;
  for (std::uint64_t i = 0; i < w.closed(); ++i)
    out.push_back(w.take_label(i));
  return out;
}

std::vector<std::string> kinds(const std::vector<window_label>& labels) {
  std::vector<std::string> out;
  for (const auto& l : labels) {
    out.push_back(l.kind == window_kind::step    ? "step " + std::to_string(l.step)
                  : l.kind == window_kind::phase ? l.phase
                                                 : std::string(to_string(l.kind)));
  }
  return out;
}

TEST(StepWindows, SetupStepsAndTailTileTheRun) {
  const auto l = windows_of({"loading the model", "step 1/4 | loss 10.2", "step 2/4 | loss 9.9",
                             "step 3/4 | loss 9.1", "step 4/4 | loss 8.8", "saving"});
  EXPECT_EQ(kinds(l), (std::vector<std::string>{"setup", "step 2", "step 3", "step 4", "tail"}));
  EXPECT_EQ(l[1].step_gap, 1U);
  EXPECT_EQ(l[1].total, 4U);
}

TEST(StepWindows, EvalResultsWithoutAStartLineCloseAnEvalWindow) {
  // nanoGPT evaluates at the top of the iteration and prints the result before the step line.
  const auto l = windows_of(
      {"iter 0: loss 10.9, time 900ms, mfu -100.00%", "iter 1: loss 10.8, time 90ms, mfu 30.00%",
       "step 2: train loss 10.7, val loss 10.8", "iter 2: loss 10.6, time 91ms, mfu 30.00%"});
  ASSERT_EQ(l.size(), 5U);
  EXPECT_EQ(kinds(l)[1], "step 1");
  EXPECT_EQ(l[2].kind, window_kind::phase);
  EXPECT_EQ(l[2].phase, "eval");
  EXPECT_EQ(kinds(l)[3], "step 2");
  EXPECT_EQ(l[3].step_gap, 1U);
  bool has_val = false;
  for (const auto& m : l[2].metrics)
    has_val = has_val || m.name == "val_loss";
  EXPECT_TRUE(has_val);
}

TEST(StepWindows, MetricsOnLaterLinesJoinTheStepTheyReport) {
  // A Hugging Face bar update, then its log dict: the loss belongs to the step just closed.
  const auto l =
      windows_of({" 10%|#         | 1/10 [00:01<00:09,  1.00it/s]",
                  " 20%|##        | 2/10 [00:02<00:08,  1.00it/s]",
                  "{'loss': 2.5, 'grad_norm': 1.25, 'learning_rate': 5e-05, 'epoch': 0.2}"});
  ASSERT_EQ(l.size(), 3U);
  EXPECT_EQ(kinds(l)[1], "step 2");
  bool has_loss = false;
  for (const auto& m : l[1].metrics)
    has_loss = has_loss || (m.name == "loss" && m.value == 2.5);
  EXPECT_TRUE(has_loss);
}

TEST(StepWindows, ARepeatedStepIsNotANewWindow) {
  const auto l = windows_of(
      {"step 1/9 | loss 3.0", "step 2/9 | loss 2.9", "step 2/9 | loss 2.9", "step 3/9 | loss 2.8"});
  EXPECT_EQ(kinds(l), (std::vector<std::string>{"setup", "step 2", "step 3", "tail"}));
}

TEST(StepWindows, LoggingEveryKStepsGivesOneWindowOfKSteps) {
  const auto l =
      windows_of({"step 10/100 | loss 3.0", "step 20/100 | loss 2.9", "step 30/100 | loss 2.8"});
  ASSERT_EQ(l.size(), 4U);
  EXPECT_EQ(l[1].step_gap, 10U);
  EXPECT_EQ(l[2].step_gap, 10U);
}

TEST(StepWindows, NoStepLinesAtAllIsOneSetupWindow) {
  const auto l = windows_of({"hello", "world"});
  EXPECT_EQ(kinds(l), (std::vector<std::string>{"setup"}));
}

// Feeds {line, instant in ms} pairs; records the boundaries handed to the sampler.
struct fed {
  std::vector<window_label> labels;
  std::vector<std::int64_t> boundaries_ms;
  std::vector<std::optional<std::uint64_t>> step_windows;
};
fed feed(const std::vector<std::pair<std::string, int>>& lines, std::optional<int> end_ms = {}) {
  steps::step_parser parser;
  step_windows w;
  fed out;
  std::uint64_t n = 0;
  for (const auto& [line, ms] : lines) {
    if (end_ms && ms >= *end_ms) w.set_end(kStart + std::chrono::milliseconds(*end_ms));
    const auto o = w.on_line(parser.parse(line), ++n, kStart + std::chrono::milliseconds(ms));
    if (o.boundary) out.boundaries_ms.push_back(ms);
    out.step_windows.push_back(o.step_window);
  }
  if (end_ms) w.set_end(kStart + std::chrono::milliseconds(*end_ms));
  w.on_exit();
  for (std::uint64_t i = 0; i < w.closed(); ++i)
    out.labels.push_back(w.take_label(i));
  return out;
}

TEST(StepWindows, AStepLineAndAnEvalStartInOneReadLeaveNoEmptyWindow) {
  const auto f = feed({{"step 1/9 | loss 3.0", 10},
                       {"step 2/9 | loss 2.9", 20},
                       {"***** Running Evaluation *****", 20},  // same read as step 2
                       {"{'eval_loss': 2.5}", 30},
                       {"step 3/9 | loss 2.8", 40}});
  EXPECT_EQ(kinds(f.labels),
            (std::vector<std::string>{"setup", "step 2", "eval", "step 3", "tail"}));
  EXPECT_EQ(f.boundaries_ms, (std::vector<std::int64_t>{10, 20, 30, 40}));
  // One boundary per window before the tail: none of them shares an instant with another.
  EXPECT_EQ(f.boundaries_ms.size() + 1, f.labels.size());
}

TEST(StepWindows, StepLinesThatArriveTogetherShareOneWindow) {
  const auto f = feed({{"step 1/100 | loss 3.0", 10},
                       {"step 2/100 | loss 2.9", 20},
                       {"step 3/100 | loss 2.8", 20},
                       {"step 4/100 | loss 2.7", 20},
                       {"step 5/100 | loss 2.6", 30}});
  EXPECT_EQ(kinds(f.labels), (std::vector<std::string>{"setup", "step 4", "step 5", "tail"}));
  EXPECT_EQ(f.labels[1].step_gap, 3U);
  EXPECT_EQ(f.labels[1].line, 4U);
  double loss = 0;
  for (const auto& m : f.labels[1].metrics)
    if (m.name == "loss") loss = m.value;
  EXPECT_EQ(loss, 2.7);  // the last line's metrics
  EXPECT_EQ(f.labels[2].step_gap, 1U);
  // --inline: the lines of one window all point at it (the annotation goes on the last).
  EXPECT_EQ(f.step_windows[1], std::optional<std::uint64_t>(1));
  EXPECT_EQ(f.step_windows[3], std::optional<std::uint64_t>(1));
}

TEST(StepWindows, StepsWithNoWindowToJoinCountInTheNextStepWindow) {
  // An evaluation result and a step line in one read: the step window after them holds both
  // step lines' steps.
  const auto f = feed({{"step 1/9 | loss 3.0", 10},
                       {"step 250: train loss 1.9, val loss 2.0", 20},
                       {"step 2/9 | loss 2.9", 20},
                       {"step 3/9 | loss 2.8", 30}});
  EXPECT_EQ(kinds(f.labels), (std::vector<std::string>{"setup", "eval", "step 3", "tail"}));
  EXPECT_EQ(f.labels[2].step_gap, 2U);
}

TEST(StepWindows, ALineStampedBeforeTheLastBoundaryJoinsIt) {
  // A stdout line that began before a stderr step line ended arrives stamped earlier.
  steps::step_parser parser;
  step_windows w;
  EXPECT_TRUE(
      w.on_line(parser.parse("step 1/9 | loss 3.0"), 1, at(10), child_stream::err).boundary);
  EXPECT_TRUE(
      w.on_line(parser.parse("step 2/9 | loss 2.9"), 2, at(20), child_stream::err).boundary);
  const auto o = w.on_line(parser.parse("step 3/9 | loss 2.8"), 3, at(15), child_stream::out);
  EXPECT_FALSE(o.boundary);
  w.on_exit();
  w.take_label(0);
  const auto l = w.take_label(1);
  EXPECT_EQ(l.step, 3U);
  EXPECT_EQ(l.step_gap, 2U);
  EXPECT_EQ(l.stream, child_stream::out);
}

TEST(StepWindows, LinesReadAfterTheCommandEndedCloseTheLastWindow) {
  // The last step lines were read after the command had ended: they are stamped with its end,
  // where the sampler puts the last boundary, so they close the last window (no empty tail).
  const auto f = feed({{"step 1/3 | loss 3.0", 10},
                       {"step 2/3 | loss 2.9", 20},
                       {"step 3/3 | loss 2.8", 50},
                       {"training done", 50}},
                      50);
  EXPECT_EQ(kinds(f.labels), (std::vector<std::string>{"setup", "step 2", "step 3"}));
  EXPECT_EQ(f.boundaries_ms, (std::vector<std::int64_t>{10, 20}));
  EXPECT_EQ(f.step_windows[2], std::optional<std::uint64_t>(2));
}

TEST(StepWindows, LabelsMustBeTakenInOrder) {
  steps::step_parser parser;
  step_windows w;
  w.on_line(parser.parse("step 1/9 | loss 3.0"), 1, at(1));
  w.on_line(parser.parse("step 2/9 | loss 2.9"), 2, at(2));
  EXPECT_THROW(w.take_label(1), std::logic_error);
  EXPECT_NO_THROW(w.take_label(0));
}

TEST(StepWindows, ReportedStepsCloseWindowsAndStepLinesThenOnlyCarryMetrics) {
  // The command reports its steps (joules_step) and prints its own step lines too: the lines
  // must not count the steps a second time.
  steps::step_parser parser;
  step_windows w;
  std::uint64_t n = 0;
  auto line = [&](const std::string& text, std::uint64_t ms) {
    return w.on_line(parser.parse(text), ++n, at(ms));
  };
  EXPECT_FALSE(line("loading", 1).boundary);
  EXPECT_TRUE(w.on_reported_step(1, 100, at(10)).boundary);  // closes setup
  EXPECT_TRUE(w.steps_reported());
  EXPECT_FALSE(line("step 1/3 | loss 4.0", 11).boundary);
  EXPECT_TRUE(w.on_reported_step(2, 100, at(20)).boundary);
  EXPECT_FALSE(line("step 2/3 | loss 3.0", 21).boundary);
  // A step reported at the instant of the last boundary joins its window (tokens add up).
  EXPECT_FALSE(w.on_reported_step(3, 50, at(20)).boundary);
  // Steps that could not be sent: the next window spans them (step_gap).
  EXPECT_TRUE(w.on_reported_step(6, 300, at(40)).boundary);
  w.on_exit();
  ASSERT_EQ(w.closed(), 4U);
  const auto setup = w.take_label(0);
  EXPECT_EQ(setup.kind, window_kind::setup);
  const auto two = w.take_label(1);
  EXPECT_EQ(two.kind, window_kind::step);
  EXPECT_EQ(two.step, 3U);
  EXPECT_EQ(two.step_gap, 2U);
  EXPECT_EQ(two.tokens, 150U);
  EXPECT_EQ(two.line, 0U);
  EXPECT_FALSE(two.stream.has_value());
  bool has_loss = false;
  for (const auto& m : two.metrics)
    has_loss = has_loss || (m.name == "loss" && m.value == 3.0);
  EXPECT_TRUE(has_loss);  // the line's metrics joined the reported step's window
  const auto six = w.take_label(2);
  EXPECT_EQ(six.step, 6U);
  EXPECT_EQ(six.step_gap, 3U);
  EXPECT_EQ(six.tokens, 300U);
  EXPECT_EQ(w.take_label(3).kind, window_kind::tail);
}

}  // namespace
}  // namespace joules
