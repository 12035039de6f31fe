// Token sources (src/tokens): recognising each server from its page, counter deltas across
// restarts, and the log lines of each server.
#include <gtest/gtest.h>

#include <string>

#include "tokens/counter_deltas.hpp"
#include "tokens/log_lines.hpp"
#include "tokens/server_page.hpp"
#include "util/error.hpp"

namespace joules::tokens {
namespace {

double total(const page_reading& r, count_kind k) {
  double sum = 0.0;
  for (const auto& s : r.counts[static_cast<std::size_t>(k)])
    sum += s.value;
  return sum;
}

// The pages as each server writes them (names from their sources: docs/inference.md).
const char* kVllm =
    "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
    "# TYPE vllm:num_requests_running gauge\n"
    "vllm:num_requests_running{engine=\"0\",model_name=\"meta-llama/Llama-3.1-8B\"} 3.0\n"
    "# TYPE vllm:prompt_tokens_total counter\n"
    "vllm:prompt_tokens_total{engine=\"0\",model_name=\"meta-llama/Llama-3.1-8B\"} 1000.0\n"
    "# TYPE vllm:prompt_tokens_created gauge\n"
    "vllm:prompt_tokens_created{engine=\"0\",model_name=\"meta-llama/Llama-3.1-8B\"} 1.7e9\n"
    "vllm:generation_tokens_total{engine=\"0\",model_name=\"meta-llama/Llama-3.1-8B\"} 4000.0\n"
    "vllm:request_success_total{engine=\"0\",finished_reason=\"stop\",model_name=\"meta-llama/"
    "Llama-3.1-8B\"} 7.0\n"
    "vllm:request_success_total{engine=\"0\",finished_reason=\"length\",model_name=\"meta-llama/"
    "Llama-3.1-8B\"} 3.0\n";

TEST(ServerPage, RecognisesVllmAndSumsItsSeries) {
  const auto p = read_page(kVllm, {});
  ASSERT_TRUE(p.reading) << p.error;
  const page_reading& r = *p.reading;
  EXPECT_EQ(r.kind, server_kind::vllm);
  EXPECT_EQ(total(r, count_kind::input), 1000.0);
  EXPECT_EQ(total(r, count_kind::output), 4000.0);
  EXPECT_EQ(total(r, count_kind::requests), 10.0);
  EXPECT_EQ(r.running, 3.0);
  EXPECT_EQ(r.models, std::vector<std::string>{"meta-llama/Llama-3.1-8B"});
  EXPECT_TRUE(r.known[0] && r.known[1] && r.known[2]);
}

TEST(ServerPage, RecognisesSglangTgiAndLlamaCpp) {
  auto p = read_page(
      "sglang:prompt_tokens_total{model_name=\"qwen\"} 10\n"
      "sglang:generation_tokens_total{model_name=\"qwen\"} 20\n"
      "sglang:num_running_reqs{model_name=\"qwen\"} 0\n",
      {});
  ASSERT_TRUE(p.reading) << p.error;
  EXPECT_EQ(p.reading->kind, server_kind::sglang);
  EXPECT_EQ(total(*p.reading, count_kind::output), 20.0);
  EXPECT_FALSE(p.reading->known[static_cast<std::size_t>(count_kind::requests)]);

  p = read_page(
      "tgi_request_input_length_bucket{le=\"10\"} 1\n"
      "tgi_request_input_length_sum 300\n"
      "tgi_request_input_length_count 4\n"
      "tgi_request_generated_tokens_sum 1200\n"
      "tgi_request_generated_tokens_count 4\n"
      "tgi_batch_current_size 2\n",
      {});
  ASSERT_TRUE(p.reading) << p.error;
  EXPECT_EQ(p.reading->kind, server_kind::tgi);
  EXPECT_EQ(total(*p.reading, count_kind::input), 300.0);
  EXPECT_EQ(total(*p.reading, count_kind::output), 1200.0);
  EXPECT_EQ(total(*p.reading, count_kind::requests), 4.0);
  EXPECT_EQ(p.reading->running, 2.0);
  EXPECT_TRUE(p.reading->models.empty());

  p = read_page(
      "# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.\n"
      "# TYPE llamacpp:prompt_tokens_total counter\n"
      "llamacpp:prompt_tokens_total 33065\n"
      "llamacpp:tokens_predicted_total 7801\n"
      "llamacpp:requests_processing 1\n",
      {});
  ASSERT_TRUE(p.reading) << p.error;
  EXPECT_EQ(p.reading->kind, server_kind::llamacpp);
  EXPECT_EQ(total(*p.reading, count_kind::output), 7801.0);
  EXPECT_EQ(p.reading->running, 1.0);
}

TEST(ServerPage, OneClearLineForWhatIsNotAServer) {
  auto p = read_page("<html><body>Not Found</body></html>\n", {});
  EXPECT_FALSE(p.reading);
  EXPECT_EQ(p.error, "not Prometheus text: line 1: expected a metric name");
  p = read_page("node_cpu_seconds_total{cpu=\"0\"} 5\n", {});
  EXPECT_FALSE(p.reading);
  EXPECT_NE(p.error.find("no token counter joules knows"), std::string::npos);
  EXPECT_NE(p.error.find("--tokens-metric"), std::string::npos);
}

TEST(ServerPage, CustomSelectorsPickTheirSeries) {
  const std::vector<metric_selector> custom = {
      parse_metric_selector("out_total{kind=\"gen\"}"),
      parse_metric_selector("input=in_total"),
  };
  auto p = read_page(
      "out_total{kind=\"gen\",model_name=\"a\"} 5\nout_total{kind=\"other\"} 100\nin_total 7\n"
      "vllm:generation_tokens_total 9\n",
      custom);
  ASSERT_TRUE(p.reading) << p.error;
  EXPECT_EQ(p.reading->kind, server_kind::custom);
  EXPECT_EQ(total(*p.reading, count_kind::output), 5.0);
  EXPECT_EQ(total(*p.reading, count_kind::input), 7.0);
  EXPECT_EQ(p.reading->models, std::vector<std::string>{"a"});
  p = read_page("in_total 7\n", custom);
  EXPECT_FALSE(p.reading);
  EXPECT_EQ(p.error, "no series out_total{kind=\"gen\"} on the page");
}

TEST(ServerPage, SelectorSyntax) {
  const auto s = parse_metric_selector("requests=done_total{a=\"b\"}");
  EXPECT_EQ(s.kind, count_kind::requests);
  EXPECT_EQ(s.name, "done_total");
  EXPECT_EQ(s.labels, (label_pairs{{"a", "b"}}));
  EXPECT_EQ(parse_metric_selector("x_total").kind, count_kind::output);
  for (const char* bad : {"", "9x", "tokens=x", "x{a=b}", "x{a=\"b\""}) {
    EXPECT_THROW(parse_metric_selector(bad), usage_error) << bad;
  }
}

page_reading vllm_page(double in, double out, const char* engine = "0") {
  page_reading r;
  r.kind = server_kind::vllm;
  r.known = {true, true, false};
  r.counts[0].push_back({std::string("in{engine=") + engine + "}", in});
  r.counts[1].push_back({std::string("out{engine=") + engine + "}", out});
  return r;
}

TEST(CounterDeltas, IncreasesAcrossARestartAsRateDoes) {
  counter_deltas d;
  EXPECT_FALSE(d.update(vllm_page(100, 1000)));  // a baseline
  auto x = d.update(vllm_page(150, 1400));
  ASSERT_TRUE(x);
  EXPECT_EQ(x->count[0], 50.0);
  EXPECT_EQ(x->count[1], 400.0);
  EXPECT_EQ(x->resets, 0);
  // The server restarted and has counted 30 output tokens since.
  x = d.update(vllm_page(5, 30));
  ASSERT_TRUE(x);
  EXPECT_EQ(x->count[0], 5.0);
  EXPECT_EQ(x->count[1], 30.0);
  EXPECT_EQ(x->resets, 2);
  // A gap: the next page is a baseline again.
  d.forget();
  EXPECT_FALSE(d.update(vllm_page(500, 900)));
  x = d.update(vllm_page(510, 950));
  ASSERT_TRUE(x);
  EXPECT_EQ(x->count[1], 50.0);
}

TEST(CounterDeltas, SeriesAreKeptApart) {
  counter_deltas d;
  page_reading a = vllm_page(0, 1000, "0");
  a.counts[1].push_back({"out{engine=1}", 500});
  d.update(a);
  page_reading b = vllm_page(0, 1100, "0");
  b.counts[1].push_back({"out{engine=1}", 20});  // engine 1 restarted
  b.counts[1].push_back({"out{engine=2}", 7});   // engine 2 is new
  const auto x = d.update(b);
  ASSERT_TRUE(x);
  EXPECT_EQ(x->count[1], 100.0 + 20.0 + 7.0);
  EXPECT_EQ(x->resets, 1);
}

TEST(LogLines, VllmStatsLines) {
  auto t = parse_log_line(
      "INFO 05-01 12:00:00 [loggers.py:123] Engine 003: Avg prompt throughput: 1234.5 tokens/s, "
      "Avg generation throughput: 456.7 tokens/s, Running: 12 reqs, Waiting: 0 reqs, GPU KV "
      "cache usage: 3.1%, Prefix cache hit rate: 0.0%");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->server, server_kind::vllm);
  EXPECT_TRUE(t->rate && t->silent_when_idle && t->input_known);
  EXPECT_EQ(t->input, 1234.5);
  EXPECT_EQ(t->output, 456.7);
  EXPECT_EQ(t->stream, 3);
  t = parse_log_line(
      "INFO 05-01 12:00:00 metrics.py:341] Avg prompt throughput: 0.0 tokens/s, Avg generation "
      "throughput: 25.1 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: 0 reqs");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->stream, 0);
  EXPECT_EQ(t->output, 25.1);
}

TEST(LogLines, SglangLlamaCppAndTgiLines) {
  auto t = parse_log_line(
      "[2025-01-01 12:00:00 TP0] Decode batch. #running-req: 4, #token: 1200, token usage: 0.01, "
      "cuda graph: True, gen throughput (token/s): 180.25, #queue-req: 0");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->server, server_kind::sglang);
  EXPECT_TRUE(t->rate);
  EXPECT_FALSE(t->silent_when_idle);
  EXPECT_EQ(t->output, 180.25);
  t = parse_log_line(
      "[2025-01-01 12:00:00 TP0] Prefill batch. #new-seq: 2, #new-token: 77, #cached-token: 0, "
      "token usage: 0.00, #running-req: 0, #queue-req: 0");
  ASSERT_TRUE(t);
  EXPECT_FALSE(t->rate);
  EXPECT_EQ(t->input, 77.0);
  t = parse_log_line(
      "slot print_timings: id  0 | task 5 | prompt eval time =      35.12 ms /    12 tokens (    "
      "2.93 ms per token,   341.69 tokens per second)");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->server, server_kind::llamacpp);
  EXPECT_EQ(t->input, 12.0);
  EXPECT_EQ(t->output, 0.0);
  t = parse_log_line(
      "slot print_timings: id  0 | task 5 |        eval time =     412.48 ms /    31 tokens (   "
      "13.31 ms per token,    75.16 tokens per second)");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->output, 31.0);
  EXPECT_EQ(t->requests, 1.0);
  t = parse_log_line(
      "2025-01-01T12:00:00.000000Z  INFO generate{parameters=GenerateParameters { best_of: None } "
      "total_time=\"1.31s\" validation_time=\"1.1ms\" queue_time=\"50µs\" "
      "inference_time=\"1.280000064s\" time_per_token=\"10.000000ms\" seed=\"None\"}: "
      "text_generation_router::server: router/src/server.rs:422: Success");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->server, server_kind::tgi);
  EXPECT_EQ(t->output, 128.0);
  // A per-token time so small that the quotient overflows is no count.
  EXPECT_FALSE(parse_log_line("inference_time=\"1.28s\" time_per_token=\"1e-310ms\"}: Success"));
  t = parse_log_line(
      "Engine 1e300: Avg prompt throughput: 1.0 tokens/s, "
      "Avg generation throughput: 2.0 tokens/s");
  ASSERT_TRUE(t);
  EXPECT_GT(t->stream, 0);
  for (const char* other : {"step 10/100 loss 2.3", "Avg prompt throughput: x tokens/s",
                            "eval time = fast", "", "throughput: 5"}) {
    EXPECT_FALSE(parse_log_line(other)) << other;
  }
}

}  // namespace
}  // namespace joules::tokens
