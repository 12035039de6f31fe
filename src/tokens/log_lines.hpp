#pragma once
// Token counts an inference server prints in its log, for `wrap` of a server when no /metrics
// URL is given.  They are estimates (docs/inference.md, "From the log"): a rate rounded to 0.1
// token/s times a span joules infers from when the lines arrive, or a request's count placed at
// the instant its line arrives.  The lines, each from the server's source:
//
//   vLLM       "Avg prompt throughput: 12.3 tokens/s, Avg generation throughput: 45.6 tokens/s,
//              ..." (optionally after "Engine 000: "): rates over the span since that engine's
//              previous stats line, printed every VLLM_LOG_STATS_INTERVAL (10 s), not at all
//              while the server is idle
//   SGLang     "Decode batch. ... gen throughput (token/s): 45.67, ...": the rate since the
//              previous decode line; "Prefill batch. ... #new-token: 7, ...": input tokens
//   llama.cpp  "prompt eval time = 35.12 ms / 12 tokens (...)" and
//              "       eval time = 412.48 ms / 31 tokens (...)": one request's counts
//   TGI        "... inference_time=\"1.2s\" time_per_token=\"12ms\" ...: Success": one request's
//              generated tokens, inference_time / time_per_token
//
// Pure; thread-safety: none needed.

#include <optional>
#include <string_view>

#include "tokens/server_page.hpp"

namespace joules::tokens {

struct log_tokens {
  server_kind server = server_kind::vllm;
  // Tokens per second over the span since this stream's previous line (`rate`), or tokens
  // counted at the line.
  bool rate = false;
  double input = 0.0;
  double output = 0.0;
  bool input_known = false;
  double requests = 0.0;  // requests the line reports as done (llama.cpp, TGI)
  bool requests_known = false;
  // Which of the server's streams the rate belongs to ("Engine 003" of vLLM, SGLang's
  // decode lines); rates of one stream are spans of that stream's lines.
  int stream = 0;
  // The server prints nothing while idle (vLLM): the span of a rate is at most its usual
  // interval, not the whole silence before it.
  bool silent_when_idle = false;
};

// The tokens a line reports, or nullopt when it reports none.  Fast on other lines (a few
// substring searches).
std::optional<log_tokens> parse_log_line(std::string_view line);

}  // namespace joules::tokens
