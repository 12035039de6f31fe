#include "session/inference_report.hpp"

#include <fmt/format.h>

#include <cmath>

#include "util/json_writer.hpp"
#include "util/strings.hpp"

namespace joules::session {
namespace {

std::string gpu_list(const std::vector<unsigned>& gpus) {
  std::string out;
  for (unsigned g : gpus) {
    if (!out.empty()) out += ',';
    out += std::to_string(g);
  }
  return out;
}

// Three significant figures, for J/token and tokens/J ("0.412", "2.43", "1.52e+03" never:
// fmt's g switches to exponents only below 1e-4).
std::string sig3(double v) {
  if (std::abs(v) >= 1000.0) return fmt::format("{:.0f}", v);
  return fmt::format("{:.3g}", v);
}

// Whole counts with thousands separators, locale-free: 12,345.
std::string count(double v) {
  const auto n = static_cast<long long>(std::llround(v));
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

}  // namespace

std::string source_words(const tokens::source_view& v) {
  const std::string server = v.server.empty() ? std::string("server") : v.server;
  const std::string who = v.id.estimated
                              ? "the log of " + server
                              : server + (v.model_name.empty() ? "" : " serving " + v.model_name);
  return fmt::format("{} on GPU{} {}", who, v.id.gpus.size() == 1 ? "" : "s", gpu_list(v.id.gpus));
}

std::string inference_record(const run_context& ctx, const tokens::source_view& v,
                             const tokens::window_totals& t, std::string_view window) {
  json_writer w;
  w.begin_object();
  common_record_fields(w, "inference", ctx);
  w.field("window", window);
  w.key("source").begin_object();
  w.field("endpoint", v.id.endpoint);
  w.field("server", v.server.empty() ? std::optional<std::string>() : v.server);
  w.field("model_name", v.model_name.empty() ? std::optional<std::string>() : v.model_name);
  w.key("gpus").begin_array();
  for (unsigned g : v.id.gpus)
    w.value(g);
  w.end_array();
  w.field("method", v.id.estimated ? "estimated" : "counter");
  w.end_object();
  w.field("start_monotonic_s", t.start_s).field("end_monotonic_s", t.end_s);
  w.field("duration_s", t.end_s - t.start_s);
  w.field("active_s", t.active_s).field("idle_s", t.idle_s).field("gap_s", t.gap_s);
  w.field("gaps", static_cast<std::uint64_t>(t.gaps));
  w.field("energy_j", t.active_energy_j + t.idle_energy_j);
  w.field("active_energy_j", t.active_energy_j).field("idle_energy_j", t.idle_energy_j);
  w.field("gap_energy_j", t.gap_energy_j);
  w.field("input_tokens", t.input_known ? std::optional<double>(t.input_tokens) : std::nullopt);
  w.field("output_tokens", t.output_tokens);
  w.field("requests", t.requests_known ? std::optional<double>(t.requests) : std::nullopt);
  w.field("energy_per_output_token_j", t.energy_per_output_token_j());
  w.field("energy_per_output_token_with_idle_j", t.energy_per_output_token_with_idle_j());
  w.field("energy_per_token_j", t.energy_per_token_j());
  w.field("output_tokens_per_j", t.output_tokens_per_j());
  w.field("energy_per_request_j", t.energy_per_request_j());
  w.field("idle_energy_ratio", t.idle_energy_ratio());
  w.field("output_tokens_per_s", t.output_tokens_per_s());
  w.field("input_tokens_per_s", t.input_tokens_per_s());
  w.field("avg_power_w", t.avg_power_w());
  w.field("scrapes", v.scrapes).field("scrape_errors", v.scrape_errors);
  w.field("counter_resets", v.counter_resets);
  w.end_object();
  return w.take();
}

summary_part inference_summary(const tokens::source_view& v) {
  const tokens::window_totals& t = v.run;
  std::string text = source_words(v) + ": ";
  if (const auto j = t.energy_per_output_token_j()) {
    text += fmt::format("{} J/output token at load", sig3(*j));
    if (const auto all = t.energy_per_output_token_with_idle_j(); all && t.idle_energy_j > 0)
      text += fmt::format(" ({} with idle)", sig3(*all));
    if (const auto in_out = t.energy_per_token_j())
      text += fmt::format(", {} J/token in+out", sig3(*in_out));
    if (const auto per_j = t.output_tokens_per_j())
      text += fmt::format(", {} tokens/J", sig3(*per_j));
    if (const auto req = t.energy_per_request_j())
      text += fmt::format(", {} J/request", sig3(*req));
  } else {
    text += "no output token counted";
  }
  text += fmt::format("; {} output", count(t.output_tokens));
  if (t.input_known) text += fmt::format(" and {} input", count(t.input_tokens));
  text += fmt::format(" tokens in {:.1f} s", t.active_s + t.idle_s);
  if (const auto idle = t.idle_energy_ratio()) {
    text += fmt::format("; idle {:.1f} % of {}", *idle * 100.0,
                        format_joules(t.active_energy_j + t.idle_energy_j));
  }
  if (t.gaps > 0) {
    text += fmt::format("; {} gap{} ({:.1f} s, {}) not attributed", t.gaps, t.gaps == 1 ? "" : "s",
                        t.gap_s, format_joules(t.gap_energy_j));
  }
  if (v.id.estimated) text += "; estimated from the server's log lines";
  summary_part p;
  p.label = "tokens";
  p.text = text;
  p.note = v.id.estimated ? "rates in the log times the time between its lines"
                          : "the GPUs' energy between scrapes of " + v.id.endpoint +
                                " over the tokens its counters grew by";
  return p;
}

}  // namespace joules::session
