#pragma once
// What an inference server's /metrics page says about tokens: which server it is (recognised by
// the names of its counters), its input and output token counters, its completed requests and
// how many requests run now.  The names, each checked against the server's source:
// docs/inference.md, "Where the counts come from".
//
//   vLLM       vllm:prompt_tokens_total, vllm:generation_tokens_total,
//              vllm:request_success_total, vllm:num_requests_running
//   SGLang     sglang:prompt_tokens_total, sglang:generation_tokens_total,
//              sglang:num_requests_total, sglang:num_running_reqs
//   TGI        tgi_request_input_length_sum, tgi_request_generated_tokens_sum,
//              tgi_request_generated_tokens_count, tgi_batch_current_size
//   llama.cpp  llamacpp:prompt_tokens_total, llamacpp:tokens_predicted_total,
//              (no request counter), llamacpp:requests_processing
//
// Any other counter is named with --tokens-metric [KIND=]NAME[{LABELS}].  Every series of a
// counter is kept apart (its name and labels are its key) so that a restart of one is seen as
// Prometheus' rate() sees it (counter_deltas.hpp).
//
// Pure; thread-safety: none needed.

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokens/text_parser.hpp"

namespace joules::tokens {

enum class server_kind { vllm, sglang, tgi, llamacpp, custom };
std::string_view to_string(server_kind k);

// What a counter counts.
enum class count_kind { input = 0, output = 1, requests = 2 };
inline constexpr std::size_t kCountKinds = 3;
std::string_view to_string(count_kind k);

// --tokens-metric [KIND=]NAME[{LABELS}]: one counter (every series of NAME whose labels include
// all of LABELS), summed.
struct metric_selector {
  count_kind kind = count_kind::output;
  std::string name;
  label_pairs labels;
};

// Throws usage_error naming --tokens-metric, the value and what is accepted.
metric_selector parse_metric_selector(std::string_view text);

// One series: its key (name and sorted labels) and value.
struct series_value {
  std::string key;
  double value = 0.0;
};

struct page_reading {
  server_kind kind = server_kind::custom;
  // Per count_kind; a kind the server has no counter for is `known` false.
  std::array<std::vector<series_value>, kCountKinds> counts;
  std::array<bool, kCountKinds> known{};
  std::optional<double> running;    // requests running at the scrape, when the server says
  std::vector<std::string> models;  // the `model_name` label values of the token counters
};

struct page_result {
  std::optional<page_reading> reading;
  std::string error;  // why there is no reading: one line, for people
};

// Reads one page.  With `custom` selectors, only they are read (and each must match a series);
// otherwise the page must be one of the four servers.
page_result read_page(std::string_view page, const std::vector<metric_selector>& custom);

}  // namespace joules::tokens
