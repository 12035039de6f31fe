#include "tokens/attribution.hpp"

namespace joules::tokens {
namespace {

std::optional<double> ratio(double num, double den) {
  if (!(den > 0.0)) return std::nullopt;
  return num / den;
}

}  // namespace

interval_state classify(double input_tokens, double output_tokens,
                        std::optional<double> running_start, std::optional<double> running_end) {
  if (input_tokens > 0.0 || output_tokens > 0.0) return interval_state::active;
  if (running_start.value_or(0.0) > 0.0 || running_end.value_or(0.0) > 0.0)
    return interval_state::active;
  return interval_state::idle;
}

void window_totals::add(const interval& iv) {
  if (intervals == 0) start_s = iv.start_s;
  ++intervals;
  end_s = iv.end_s;
  const double length = iv.end_s - iv.start_s;
  switch (iv.state) {
    case interval_state::gap:
      gap_s += length;
      ++gaps;
      gap_energy_j += iv.energy_j.value_or(0.0);
      return;  // a gap's tokens are not attributed
    case interval_state::idle:
      idle_s += length;
      idle_energy_j += iv.energy_j.value_or(0.0);
      break;
    case interval_state::active:
      active_s += length;
      active_energy_j += iv.energy_j.value_or(0.0);
      break;
  }
  input_tokens += iv.input_tokens;
  output_tokens += iv.output_tokens;
  requests += iv.requests;
  input_known = input_known || iv.input_known;
  requests_known = requests_known || iv.requests_known;
}

std::optional<double> window_totals::energy_per_output_token_j() const {
  return ratio(active_energy_j, output_tokens);
}

std::optional<double> window_totals::energy_per_token_j() const {
  if (!input_known) return std::nullopt;
  return ratio(active_energy_j, input_tokens + output_tokens);
}

std::optional<double> window_totals::output_tokens_per_j() const {
  if (!(output_tokens > 0.0)) return std::nullopt;
  return ratio(output_tokens, active_energy_j);
}

std::optional<double> window_totals::energy_per_request_j() const {
  if (!requests_known) return std::nullopt;
  return ratio(active_energy_j, requests);
}

std::optional<double> window_totals::energy_per_output_token_with_idle_j() const {
  return ratio(active_energy_j + idle_energy_j, output_tokens);
}

std::optional<double> window_totals::idle_energy_ratio() const {
  return ratio(idle_energy_j, active_energy_j + idle_energy_j);
}

std::optional<double> window_totals::output_tokens_per_s() const {
  return ratio(output_tokens, active_s + idle_s);
}

std::optional<double> window_totals::input_tokens_per_s() const {
  if (!input_known) return std::nullopt;
  return ratio(input_tokens, active_s + idle_s);
}

std::optional<double> window_totals::avg_power_w() const {
  return ratio(active_energy_j + idle_energy_j, active_s + idle_s);
}

void attribution::add(const interval& iv) {
  run_.add(iv);
  recent_.push_back(iv);
  while (!recent_.empty() && recent_.front().end_s <= iv.end_s - kFiveMinutesS)
    recent_.pop_front();
}

window_totals attribution::live() const {
  window_totals w;
  if (!recent_.empty()) w.add(recent_.back());
  return w;
}

window_totals attribution::last(double seconds) const {
  window_totals w;
  if (recent_.empty()) return w;
  const double from = recent_.back().end_s - seconds;
  for (const auto& iv : recent_) {
    if (iv.end_s > from) w.add(iv);
  }
  return w;
}

}  // namespace joules::tokens
