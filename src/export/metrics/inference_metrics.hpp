#pragma once
// Joules per token of inference servers (`--tokens-from`, docs/inference.md), under
// `joules_inference_*` names, on the /metrics of `serve` and of a run (and in its OTLP pushes):
// the tokens and the GPUs' energy counted (energy by state: active, idle, gap), and per-token
// gauges over four windows (`window`: live, 1m, 5m, run).  Every series is labelled with its
// source: `server` (vllm, sglang, tgi, llamacpp, custom), `model_name` (the server's own label,
// when it has one), `endpoint` (the URL without its query, or `log`), `gpus` ("0,1") and
// `method` (`counter`: the server's counters; `estimated`: its log lines).  Values from a server
// (model names) are escaped by the exposition like any label value.
//
// Thread-safety: none; one per exposition, used by the thread that owns it.

#include <vector>

#include "export/metrics/exposition.hpp"
#include "tokens/source_model.hpp"

namespace joules::exporter {

class inference_metrics {
 public:
  inference_metrics(exposition& e, const label_set& base);

  // Refills the families from the sources' views (the caller cleared the exposition).
  void fill(const std::vector<tokens::source_view>& views);

 private:
  label_set base_;
  metric_family* up_;
  metric_family* tokens_;
  metric_family* requests_;
  metric_family* energy_;
  metric_family* gap_seconds_;
  metric_family* scrape_errors_;
  metric_family* resets_;
  metric_family* per_output_token_;
  metric_family* per_output_token_with_idle_;
  metric_family* per_token_;
  metric_family* output_tokens_per_joule_;
  metric_family* per_request_;
  metric_family* idle_ratio_;
  metric_family* output_rate_;
  metric_family* input_rate_;
  metric_family* power_;
};

}  // namespace joules::exporter
