// The pure pieces of `wrap`: line splitting, the inline output gate, prediction, stragglers.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "proc/line_splitter.hpp"
#include "proc/output_channel.hpp"
#include "proc/output_gate.hpp"
#include "windows/predictor.hpp"
#include "windows/stragglers.hpp"

namespace joules {
namespace {

std::vector<std::string> split_all(const std::vector<std::string>& chunks) {
  line_splitter s;
  std::vector<std::string> lines;
  for (const auto& c : chunks)
    s.feed(c, [&](std::string_view l, std::size_t) { lines.emplace_back(l); });
  s.flush([&](std::string_view l, std::size_t) { lines.emplace_back(l); });
  return lines;
}

TEST(LineSplitter, EndsLinesAtNewlinesCarriageReturnsAndBoth) {
  EXPECT_EQ(split_all({"a\nb\r\nc\rd"}), (std::vector<std::string>{"a", "b", "c", "d"}));
  // A \r\n split across chunks is one terminator.
  EXPECT_EQ(split_all({"a\r", "\nb\n"}), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(split_all({"pro", "gress 1\rprogress 2\r", "done\n"}),
            (std::vector<std::string>{"progress 1", "progress 2", "done"}));
  EXPECT_EQ(split_all({"\n\n"}), (std::vector<std::string>{"", ""}));
}

TEST(LineSplitter, ReportsWhereEachTerminatorEnds) {
  line_splitter s;
  std::vector<std::size_t> ends;
  s.feed("ab\r\ncd\ne", [&](std::string_view, std::size_t end) { ends.push_back(end); });
  EXPECT_EQ(ends, (std::vector<std::size_t>{4, 7}));
}

TEST(LineSplitter, AHugeLineCostsBoundedMemory) {
  line_splitter s;
  const std::string chunk(1 << 20, 'x');
  std::size_t lines = 0;
  std::size_t longest = 0;
  for (int i = 0; i < 64; ++i) {
    s.feed(chunk, [&](std::string_view l, std::size_t) {
      ++lines;
      longest = std::max(longest, l.size());
    });
  }
  s.feed("\nnext\n", [&](std::string_view l, std::size_t) {
    ++lines;
    longest = std::max(longest, l.size());
  });
  EXPECT_EQ(lines, 2U);
  EXPECT_EQ(longest, line_splitter::kMaxLine);
  EXPECT_LE(s.capacity(), 2 * line_splitter::kMaxLine);
}

// Everything the gate writes, through a pipe.
class gate_output {
 public:
  gate_output() { EXPECT_EQ(pipe2(fds_, O_NONBLOCK), 0); }
  ~gate_output() {
    close(fds_[0]);
    close(fds_[1]);
  }
  int fd() const { return fds_[1]; }
  std::string take() {
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fds_[0], buf, sizeof buf)) > 0)
      out.append(buf, static_cast<std::size_t>(n));
    return out;
  }

 private:
  int fds_[2];
};

TEST(OutputGate, HoldsAStepLinesEndUntilItsEnergyIsKnown) {
  gate_output out;
  output_channel ch(out.fd());
  output_gate g(ch);
  const auto now = steady::now();
  g.write("step 1 loss 2.0");
  g.hold_for(1, now);
  g.write("\nstep 2 loss 1.9");
  g.hold_for(2, now);
  g.write("\nother line\n");
  EXPECT_EQ(out.take(), "step 1 loss 2.0");
  g.annotate(0, "");  // a window without a marker changes nothing
  g.annotate(1, " energy:10.0J/step avg:100W");
  EXPECT_EQ(out.take(), " energy:10.0J/step avg:100W\nstep 2 loss 1.9");
  g.annotate(2, " energy:11.0J/step avg:110W");
  EXPECT_EQ(out.take(), " energy:11.0J/step avg:110W\nother line\n");
  EXPECT_FALSE(g.holding());
  g.write("free\n");
  EXPECT_EQ(out.take(), "free\n");
}

TEST(OutputGate, AStepLineThatJoinsTheSameWindowTakesItsAnnotation) {
  gate_output out;
  output_channel ch(out.fd());
  output_gate g(ch);
  const auto now = steady::now();
  g.write("step 1");
  g.hold_for(4, now);
  g.write("\nstep 2");
  g.hold_for(4, now);  // arrived in the same read: one window for both
  g.write("\n");
  EXPECT_EQ(out.take(), "step 1");
  g.annotate(4, " energy:2.0J/step");
  EXPECT_EQ(out.take(), "\nstep 2 energy:2.0J/step\n");
}

TEST(OutputGate, NeverKeepsOutputLongerThanItsBounds) {
  gate_output out;
  output_channel ch(out.fd());
  output_gate g(ch);
  const auto now = steady::now();
  g.write("step 1");
  g.hold_for(1, now);
  g.write("\nmore\n");
  g.expire(now + std::chrono::milliseconds(100));
  EXPECT_EQ(out.take(), "step 1");
  g.expire(now + output_gate::kMaxHold + std::chrono::milliseconds(1));
  EXPECT_EQ(out.take(), "\nmore\n");
  g.annotate(1, " late");  // the annotation lost, the output never
  EXPECT_EQ(out.take(), "");
}

TEST(OutputChannel, OwnLinesGoOutOnlyBetweenTheCommandsLines) {
  gate_output out;
  output_channel ch(out.fd());
  const auto now = steady::now();
  ch.own_line("{\"type\":\"session_start\"}\n", now);  // nothing written yet: a line start
  EXPECT_EQ(out.take(), "{\"type\":\"session_start\"}\n");
  ch.write("step 2/3\nbar 50%");
  ch.own_line("{\"step\":2}\n", now);
  ch.own_line("{\"step\":3}\n", now);
  EXPECT_EQ(out.take(), "step 2/3\nbar 50%");  // the bar's line has not ended
  EXPECT_TRUE(ch.waiting());
  ch.expire(now + std::chrono::milliseconds(500));
  ch.write(" 60%");
  EXPECT_EQ(out.take(), " 60%");
  ch.write(" done\nstep 3/3");  // out after the first newline, the rest follows
  EXPECT_EQ(out.take(), " done\n{\"step\":2}\n{\"step\":3}\nstep 3/3");
  EXPECT_FALSE(ch.waiting());
  ch.write("\n");
  ch.own_line("{\"step\":4}\n", now);
  EXPECT_EQ(out.take(), "\n{\"step\":4}\n");
}

TEST(OutputChannel, ALineThatNeverEndsKeepsOurLinesOnlySoLong) {
  gate_output out;
  output_channel ch(out.fd());
  const auto now = steady::now();
  ch.write("\r 10%|#   | 10/100");
  ch.own_line("record\n", now);
  ch.expire(now + output_channel::kMaxWait - std::chrono::milliseconds(1));
  EXPECT_EQ(out.take(), "\r 10%|#   | 10/100");
  ch.expire(now + output_channel::kMaxWait);
  EXPECT_EQ(out.take(), "\nrecord\n");  // a newline of ours ends the bar's line
  ch.write("\r 20%|##  | 20/100");
  ch.finish(/*end_line=*/false);  // nothing waits: the command's bytes stay as they are
  EXPECT_EQ(out.take(), "\r 20%|##  | 20/100");
  ch.own_line("session_end\n", now);  // after the end: at once, on a line of its own
  EXPECT_EQ(out.take(), "\nsession_end\n");
  output_channel summary(out.fd());
  summary.write("no newline");
  summary.finish(/*end_line=*/true);
  EXPECT_EQ(out.take(), "no newline\n");
}

TEST(Predictor, ExtrapolatesFromTheStepsAfterWarmUpWithOverheadsIncluded) {
  predictor p(/*predict_after=*/10, /*warmup_steps=*/3);
  double energy = 500.0;  // setup
  double t = 5.0;
  std::optional<prediction> first;
  for (std::uint64_t step = 2; step <= 40; ++step) {
    energy += step <= 4 ? 300.0 : 100.0;  // warm-up steps are slow
    t += 1.0;
    p.add_window(energy, t, step);
    if (step % 10 == 0) {  // an evaluation every 10 steps: 50 J, 2 s
      energy += 50.0;
      t += 2.0;
      p.add_window(energy, t, std::nullopt);
    }
    if (auto pr = p.due(1000)) {
      if (!first) first = pr;
    }
  }
  ASSERT_TRUE(first);
  EXPECT_EQ(first->milestone_percent, 0);
  EXPECT_EQ(first->basis_steps, 10U);
  // From step 4 to 14: 10 steps of 100 J and one evaluation of 50 J.
  EXPECT_NEAR(first->energy_per_step_j, 105.0, 1e-9);
  EXPECT_NEAR(first->energy_j, 500.0 + 3 * 300.0 + 10 * 100.0 + 50.0 + 105.0 * (1000 - 14), 1e-6);
}

TEST(Predictor, AnnouncesTenFiftyAndNinetyPercentOnce) {
  predictor p(2, 0);
  std::vector<int> milestones;
  for (std::uint64_t step = 1; step <= 100; ++step) {
    p.add_window(static_cast<double>(step), static_cast<double>(step), step);
    if (auto pr = p.due(100)) milestones.push_back(pr->milestone_percent);
  }
  EXPECT_EQ(milestones, (std::vector<int>{0, 10, 50, 90}));
}

TEST(Predictor, OneEpochAtATimeWhenTheNumberOfEpochsIsUnknown) {
  predictor p(2, 0);
  std::vector<std::pair<std::uint64_t, int>> got;
  for (std::uint64_t step = 1; step <= 60; ++step) {
    const std::uint64_t epoch = (step - 1) / 20;
    p.add_window(static_cast<double>(step), static_cast<double>(step), step);
    if (auto pr = p.due(prediction_target{(epoch + 1) * 20, epoch * 20, false})) {
      EXPECT_FALSE(pr->whole_run);
      got.emplace_back(pr->total_steps, pr->milestone_percent);
    }
  }
  // The first epoch: the first prediction, then its half; each later epoch at its half only.
  EXPECT_EQ(got,
            (std::vector<std::pair<std::uint64_t, int>>{{20, 0}, {20, 50}, {40, 50}, {60, 50}}));
}

TEST(Stragglers, AGpuThatStaysApartIsReportedOnce) {
  straggler_detector d(4, 0.1, 5);
  std::vector<straggler_event> events;
  for (std::uint64_t step = 1; step <= 20; ++step) {
    const double slow = step > 8 ? 70.0 : 100.0;
    for (const auto& e : d.add(step, {100.0, 101.0, slow, 99.0}))
      events.push_back(e);
  }
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].device, 2U);
  EXPECT_NEAR(events[0].deviation, -0.3 / 1.0 * 100.0 / 99.5, 0.01);
  EXPECT_EQ(events[0].at_step, 11U);  // 3 of the last 5 steps slow: median and mean apart
  const std::string msg = straggler_message(events[0], 2, "GPU-x", 4);
  EXPECT_NE(msg.find("GPU 2 (GPU-x) used 30% less energy per step"), std::string::npos) << msg;
}

TEST(Stragglers, NoiseAndTwoGpuNodesRaiseNothing) {
  straggler_detector d(4, 0.1, 5);
  std::size_t events = 0;
  for (std::uint64_t step = 1; step <= 50; ++step) {
    const double jitter = (step % 2 == 0) ? 1.15 : 0.9;  // single steps apart, not sustained
    events += d.add(step, {100.0, 100.0 * jitter, 100.0, 100.0}).size();
  }
  EXPECT_EQ(events, 0U);
  straggler_detector two(2, 0.1, 3);
  for (std::uint64_t step = 1; step <= 10; ++step)
    events += two.add(step, {100.0, 50.0}).size();
  EXPECT_EQ(events, 0U);
}

}  // namespace
}  // namespace joules
