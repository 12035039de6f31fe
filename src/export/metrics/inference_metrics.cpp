#include "export/metrics/inference_metrics.hpp"

#include <array>
#include <string>
#include <utility>

namespace joules::exporter {
namespace {

label_set source_labels(const label_set& base, const tokens::source_view& v) {
  label_set l;
  if (!v.server.empty()) l.add("server", v.server);
  if (!v.model_name.empty()) l.add("model_name", v.model_name);
  l.add("endpoint", v.id.endpoint);
  std::string gpus;
  for (unsigned g : v.id.gpus)
    gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
  l.add("gpus", gpus);
  l.add("method", v.id.estimated ? "estimated" : "counter");
  for (const auto& b : base.labels())
    l.add(b.name, b.value);
  return l;
}

}  // namespace

inference_metrics::inference_metrics(exposition& e, const label_set& base) : base_(base) {
  up_ = &e.add_family("joules_inference_up",
                      "1 when the latest scrape of the inference server read its token counters.",
                      metric_type::gauge);
  tokens_ = &e.add_family(
      "joules_inference_tokens_total",
      "Tokens the server counted (kind: input, output) in the intervals joules attributed "
      "energy to (gaps left out).",
      metric_type::counter);
  requests_ = &e.add_family("joules_inference_requests_total",
                            "Requests the server completed in the attributed intervals.",
                            metric_type::counter);
  energy_ = &e.add_family(
      "joules_inference_energy_joules_total",
      "Energy of the server's GPUs since joules first counted its tokens, by state: active "
      "(tokens counted or a request running), idle (neither), gap (the server did not answer).",
      metric_type::counter);
  gap_seconds_ = &e.add_family("joules_inference_gap_seconds_total",
                               "Time the server's token counts were not known (not attributed).",
                               metric_type::counter);
  scrape_errors_ = &e.add_family(
      "joules_inference_scrape_errors_total",
      "Scrapes of the server that read no token counts (no answer, an error, not Prometheus "
      "text, no counter joules knows).",
      metric_type::counter);
  resets_ =
      &e.add_family("joules_inference_resets_total",
                    "Token counter series that went down (server restarts).", metric_type::counter);
  per_output_token_ = &e.add_family(
      "joules_inference_energy_per_output_token_joules",
      "Energy of the server's GPUs while active per output token, over `window` (live: the last "
      "interval; 1m, 5m; run).",
      metric_type::gauge);
  per_output_token_with_idle_ = &e.add_family(
      "joules_inference_energy_per_output_token_with_idle_joules",
      "Energy of the server's GPUs, idle time included, per output token.", metric_type::gauge);
  per_token_ =
      &e.add_family("joules_inference_energy_per_token_joules",
                    "Active energy per token, input and output together.", metric_type::gauge);
  output_tokens_per_joule_ =
      &e.add_family("joules_inference_output_tokens_per_joule",
                    "Output tokens per joule of active energy.", metric_type::gauge);
  per_request_ = &e.add_family("joules_inference_energy_per_request_joules",
                               "Active energy per completed request.", metric_type::gauge);
  idle_ratio_ = &e.add_family("joules_inference_idle_energy_ratio",
                              "Share of the GPUs' energy spent while no request ran (0-1).",
                              metric_type::gauge);
  output_rate_ =
      &e.add_family("joules_inference_output_tokens_per_second",
                    "Output tokens per second over active and idle time.", metric_type::gauge);
  input_rate_ =
      &e.add_family("joules_inference_input_tokens_per_second",
                    "Input tokens per second over active and idle time.", metric_type::gauge);
  power_ = &e.add_family("joules_inference_power_watts",
                         "Average power of the server's GPUs over active and idle time.",
                         metric_type::gauge);
}

void inference_metrics::fill(const std::vector<tokens::source_view>& views) {
  for (const auto& v : views) {
    if (v.id.estimated && v.server.empty()) continue;  // no line of the server yet
    const label_set l = source_labels(base_, v);
    if (!v.id.estimated) {
      up_->add(l, v.up ? 1.0 : 0.0);
      scrape_errors_->add(l, static_cast<double>(v.scrape_errors));
      resets_->add(l, static_cast<double>(v.counter_resets));
    }
    const tokens::window_totals& run = v.run;
    if (run.input_known) tokens_->add(l.with("kind", "input"), run.input_tokens);
    tokens_->add(l.with("kind", "output"), run.output_tokens);
    if (run.requests_known) requests_->add(l, run.requests);
    energy_->add(l.with("state", "active"), run.active_energy_j);
    energy_->add(l.with("state", "idle"), run.idle_energy_j);
    energy_->add(l.with("state", "gap"), run.gap_energy_j);
    gap_seconds_->add(l, run.gap_s);
    const std::array<std::pair<const char*, const tokens::window_totals*>, 4> windows = {
        {{"live", &v.live}, {"1m", &v.one_minute}, {"5m", &v.five_minutes}, {"run", &v.run}}};
    for (const auto& [name, w] : windows) {
      const label_set lw = l.with("window", name);
      per_output_token_->add_if_known(lw, w->energy_per_output_token_j());
      per_output_token_with_idle_->add_if_known(lw, w->energy_per_output_token_with_idle_j());
      per_token_->add_if_known(lw, w->energy_per_token_j());
      output_tokens_per_joule_->add_if_known(lw, w->output_tokens_per_j());
      per_request_->add_if_known(lw, w->energy_per_request_j());
      idle_ratio_->add_if_known(lw, w->idle_energy_ratio());
      output_rate_->add_if_known(lw, w->output_tokens_per_s());
      input_rate_->add_if_known(lw, w->input_tokens_per_s());
      power_->add_if_known(lw, w->avg_power_w());
    }
  }
}

}  // namespace joules::exporter
