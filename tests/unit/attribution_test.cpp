// Joules per token (src/tokens/attribution.hpp, source_model.hpp): the figures of a window, the
// idle split, gaps, restarts, and the log model's spans.
#include <gtest/gtest.h>

#include <cmath>

#include "tokens/attribution.hpp"
#include "tokens/source_model.hpp"

namespace joules::tokens {
namespace {

interval active(double a, double b, double e, double in, double out, double req = 0) {
  interval iv;
  iv.start_s = a;
  iv.end_s = b;
  iv.state = interval_state::active;
  iv.energy_j = e;
  iv.input_tokens = in;
  iv.output_tokens = out;
  iv.requests = req;
  iv.input_known = true;
  iv.requests_known = req > 0;
  return iv;
}

interval idle(double a, double b, double e) {
  interval iv;
  iv.start_s = a;
  iv.end_s = b;
  iv.state = interval_state::idle;
  iv.energy_j = e;
  return iv;
}

TEST(Attribution, FiguresOfAWindow) {
  window_totals w;
  w.add(active(0, 10, 4000, 1000, 2000, 8));
  w.add(idle(10, 20, 1000));
  interval gap;
  gap.start_s = 20;
  gap.end_s = 25;
  gap.energy_j = 500;
  gap.output_tokens = 999;  // a gap's tokens are never counted
  w.add(gap);
  EXPECT_EQ(w.output_tokens, 2000.0);
  EXPECT_DOUBLE_EQ(*w.energy_per_output_token_j(), 2.0);
  EXPECT_DOUBLE_EQ(*w.energy_per_token_j(), 4000.0 / 3000.0);
  EXPECT_DOUBLE_EQ(*w.output_tokens_per_j(), 0.5);
  EXPECT_DOUBLE_EQ(*w.energy_per_request_j(), 500.0);
  EXPECT_DOUBLE_EQ(*w.energy_per_output_token_with_idle_j(), 2.5);
  EXPECT_DOUBLE_EQ(*w.idle_energy_ratio(), 0.2);
  EXPECT_DOUBLE_EQ(*w.output_tokens_per_s(), 100.0);
  EXPECT_DOUBLE_EQ(*w.avg_power_w(), 250.0);
  EXPECT_EQ(w.gaps, 1U);
  EXPECT_EQ(w.gap_s, 5.0);
  EXPECT_EQ(w.gap_energy_j, 500.0);
}

TEST(Attribution, UnknownIsNotZero) {
  window_totals w;
  w.add(idle(0, 10, 1000));
  EXPECT_FALSE(w.energy_per_output_token_j());
  EXPECT_FALSE(w.output_tokens_per_j());
  EXPECT_FALSE(w.energy_per_request_j());
  EXPECT_FALSE(w.energy_per_token_j());
  EXPECT_DOUBLE_EQ(*w.idle_energy_ratio(), 1.0);
}

TEST(Attribution, ClassifiesByTokensAndRunningRequests) {
  EXPECT_EQ(classify(0, 1, std::nullopt, std::nullopt), interval_state::active);
  EXPECT_EQ(classify(0, 0, std::nullopt, std::nullopt), interval_state::idle);
  EXPECT_EQ(classify(0, 0, 0.0, 2.0), interval_state::active);  // llama.cpp mid-request
  EXPECT_EQ(classify(0, 0, 0.0, 0.0), interval_state::idle);
}

TEST(Attribution, RollingWindowsKeepWholeIntervals) {
  attribution a;
  for (int i = 0; i < 400; ++i)
    a.add(active(i, i + 1, 100, 0, i < 340 ? 10 : 20));
  EXPECT_EQ(a.live().output_tokens, 20.0);
  EXPECT_EQ(a.last(60).intervals, 60U);
  EXPECT_DOUBLE_EQ(*a.last(60).energy_per_output_token_j(), 5.0);
  EXPECT_EQ(a.last(300).intervals, 300U);
  EXPECT_EQ(a.run().intervals, 400U);
  EXPECT_DOUBLE_EQ(a.run().output_tokens, 340 * 10.0 + 60 * 20.0);
}

page_reading page(double in, double out, std::optional<double> running = std::nullopt) {
  page_reading r;
  r.kind = server_kind::vllm;
  r.known = {true, true, false};
  r.counts[0].push_back({"in", in});
  r.counts[1].push_back({"out", out});
  r.running = running;
  r.models = {"m"};
  return r;
}

// A server at 500 output and 100 input tokens/s on GPUs drawing 1000 W, scraped every second.
TEST(ScrapeModel, JoulesPerTokenOfASteadyServer) {
  scrape_model m({"http://h/metrics", {0, 1}, false});
  for (int i = 0; i <= 30; ++i)
    m.observe(i, page(100.0 * i, 500.0 * i, 4.0), scrape_failure::none, "", 1000.0 * i);
  const source_view& v = m.view();
  EXPECT_EQ(v.server, "vllm");
  EXPECT_EQ(v.model_name, "m");
  EXPECT_TRUE(v.up);
  EXPECT_DOUBLE_EQ(*v.run.energy_per_output_token_j(), 2.0);
  EXPECT_DOUBLE_EQ(*v.run.energy_per_token_j(), 1000.0 / 600.0);
  EXPECT_DOUBLE_EQ(*v.live.energy_per_output_token_j(), 2.0);
  EXPECT_EQ(v.run.intervals, 30U);
  EXPECT_EQ(v.run.idle_s, 0.0);
  EXPECT_EQ(m.take_period().intervals, 30U);
  EXPECT_EQ(m.take_period().intervals, 0U);
  ASSERT_TRUE(m.take_notice());
  EXPECT_FALSE(m.take_notice());
}

TEST(ScrapeModel, IdleTimeIsSplitOff) {
  scrape_model m({"u", {0}, false});
  double out = 0;
  double e = 0;
  for (int i = 0; i <= 40; ++i) {
    const bool busy = i <= 20;
    m.observe(i, page(0, out, busy ? 1.0 : 0.0), scrape_failure::none, "", e);
    if (i < 20) out += 400;       // serving: 400 tokens/s at 700 W
    e += i < 20 ? 700.0 : 100.0;  // then idle at 100 W
  }
  const window_totals& r = m.view().run;
  EXPECT_DOUBLE_EQ(r.active_energy_j, 20 * 700.0 + 100.0);  // the interval that ends busy
  EXPECT_DOUBLE_EQ(r.idle_energy_j, 19 * 100.0);
  EXPECT_NEAR(*r.energy_per_output_token_j(), 700.0 / 400.0, 0.02);
  EXPECT_NEAR(*r.idle_energy_ratio(), 1900.0 / 16000.0, 1e-9);
}

TEST(ScrapeModel, AnOutageIsAGapNeverAZeroOrASpike) {
  scrape_model m({"u", {0}, false});
  for (int i = 0; i <= 10; ++i)
    m.observe(i, page(0, 100.0 * i), scrape_failure::none, "", 200.0 * i);
  for (int i = 11; i <= 15; ++i) {
    m.observe(i, std::nullopt, scrape_failure::no_response, "Connection refused", 200.0 * i);
    EXPECT_FALSE(m.view().up);
    EXPECT_FALSE(m.view().live.energy_per_output_token_j());  // unknown, not 0 tokens
  }
  // Back after a restart: its counters start from zero; the first page is a baseline.
  for (int i = 16; i <= 30; ++i)
    m.observe(i, page(0, 100.0 * (i - 16)), scrape_failure::none, "", 200.0 * i);
  const source_view& v = m.view();
  EXPECT_DOUBLE_EQ(*v.run.energy_per_output_token_j(), 2.0);
  EXPECT_EQ(v.run.gaps, 6U);  // 10-11 ... 15-16
  EXPECT_DOUBLE_EQ(v.run.gap_s, 6.0);
  EXPECT_DOUBLE_EQ(v.run.gap_energy_j, 1200.0);
  EXPECT_EQ(v.scrape_errors, 5U);
  EXPECT_EQ(v.counter_resets, 0U);  // the restart fell in the gap
}

TEST(ScrapeModel, ARestartBetweenTwoScrapesCountsFromZero) {
  scrape_model m({"u", {0}, false});
  m.observe(0, page(0, 1000), scrape_failure::none, "", 0);
  m.observe(1, page(0, 1100), scrape_failure::none, "", 200);
  m.observe(2, page(0, 100), scrape_failure::none, "", 400);  // restarted: 100 since
  EXPECT_EQ(m.view().counter_resets, 1U);
  EXPECT_DOUBLE_EQ(m.view().run.output_tokens, 200.0);
  EXPECT_DOUBLE_EQ(*m.view().run.energy_per_output_token_j(), 2.0);
}

TEST(ScrapeModel, NoticesOncePerChange) {
  scrape_model m({"http://h/metrics", {0}, false});
  m.observe(0, std::nullopt, scrape_failure::no_response, "refused", 0);
  EXPECT_EQ(*m.take_notice(), "http://h/metrics: refused; no tokens are counted until it answers");
  m.observe(1, std::nullopt, scrape_failure::no_response, "refused again", 0);
  EXPECT_FALSE(m.take_notice());
  m.observe(2, std::nullopt, scrape_failure::not_text, "not Prometheus text: line 1", 0);
  EXPECT_TRUE(m.take_notice());
  m.observe(3, page(0, 0), scrape_failure::none, "", 0);
  EXPECT_EQ(*m.take_notice(), "http://h/metrics: answering again after 3 s (not attributed)");
}

// vLLM's stats lines every 10 s while serving, none while idle.
TEST(LogModel, RatesTimesSpansAndSilenceIsIdle) {
  log_model m({"log", {0}, true}, 0.0);
  const auto energy = [](double t) -> std::optional<double> { return 300.0 * t; };
  log_tokens l;
  l.server = server_kind::vllm;
  l.rate = true;
  l.silent_when_idle = true;
  l.input_known = true;
  l.input = 50.0;
  l.output = 150.0;
  for (double t = 20; t <= 60; t += 10)
    m.observe(t, l, energy);
  // 100 s of silence, then serving again.
  for (double t = 170; t <= 200; t += 10)
    m.observe(t, l, energy);
  m.close(205, energy);
  const window_totals& r = m.view().run;
  // 9 lines of 10 s at 150 tokens/s; the first line's span is the default interval.
  EXPECT_DOUBLE_EQ(r.output_tokens, 9 * 10 * 150.0);
  EXPECT_DOUBLE_EQ(r.input_tokens, 9 * 10 * 50.0);
  EXPECT_DOUBLE_EQ(r.active_s, 90.0);
  EXPECT_DOUBLE_EQ(r.idle_s, 100.0);  // 60-160
  EXPECT_DOUBLE_EQ(*r.energy_per_output_token_j(), 2.0);
  EXPECT_DOUBLE_EQ(r.gap_s, 15.0);  // before the first span and after the last line
}

TEST(LogModel, CountsAtLinesAndLinesPrintedTogether) {
  log_model m({"log", {0}, true}, 0.0);
  const auto energy = [](double t) -> std::optional<double> { return 100.0 * t; };
  log_tokens prompt;
  prompt.server = server_kind::llamacpp;
  prompt.input = 10;
  prompt.input_known = true;
  log_tokens eval = prompt;
  eval.input = 0;
  eval.output = 50;
  eval.requests = 1;
  eval.requests_known = true;
  for (double t = 5; t <= 50; t += 5) {
    m.observe(t, prompt, energy);
    m.observe(t + 0.01, eval, energy);  // one request's two lines: one interval
  }
  m.tick(100, energy);
  const window_totals& r = m.view().run;
  EXPECT_DOUBLE_EQ(r.output_tokens, 500.0);
  EXPECT_DOUBLE_EQ(r.requests, 10.0);
  EXPECT_NEAR(*r.energy_per_output_token_j(), 100.0 * 45.01 / 500.0, 1e-9);
  EXPECT_EQ(r.intervals, 10U + 1U);  // the head before the first line is a gap
}

}  // namespace
}  // namespace joules::tokens
