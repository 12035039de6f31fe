#include "tokens/source_model.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace joules::tokens {
namespace {

std::optional<double> difference(std::optional<double> a, std::optional<double> b) {
  if (!a || !b) return std::nullopt;
  return std::max(0.0, *b - *a);
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty()) out += ',';
    out += s;
  }
  return out;
}

void refresh_windows(source_view& v, const attribution& a) {
  v.live = a.live();
  v.one_minute = a.last(attribution::kOneMinuteS);
  v.five_minutes = a.last(attribution::kFiveMinutesS);
  v.run = a.run();
}

}  // namespace

// --- scrape_model ---------------------------------------------------------------------------

scrape_model::scrape_model(source_identity id) {
  view_.id = std::move(id);
}

void scrape_model::add(const interval& iv) {
  attribution_.add(iv);
  period_.add(iv);
}

void scrape_model::observe(double t_s, const std::optional<page_reading>& page,
                           scrape_failure failure, const std::string& error,
                           std::optional<double> energy_j) {
  ++view_.scrapes;
  if (page) {
    const auto d = deltas_.update(*page);
    if (previous_) {
      interval iv;
      iv.start_s = previous_->t_s;
      iv.end_s = t_s;
      iv.energy_j = difference(previous_->energy_j, energy_j);
      if (previous_->ok && d && iv.energy_j) {
        const auto& c = d->count;
        iv.input_tokens = c[static_cast<std::size_t>(count_kind::input)];
        iv.output_tokens = c[static_cast<std::size_t>(count_kind::output)];
        iv.requests = c[static_cast<std::size_t>(count_kind::requests)];
        iv.input_known = d->known[static_cast<std::size_t>(count_kind::input)];
        iv.requests_known = d->known[static_cast<std::size_t>(count_kind::requests)];
        iv.state = classify(iv.input_tokens, iv.output_tokens, previous_->running, page->running);
      }
      add(iv);
    }
    if (d) view_.counter_resets += static_cast<std::uint64_t>(d->resets);
    view_.server = std::string(to_string(page->kind));
    view_.model_name = joined(page->models);
    view_.up = true;
    view_.last_error.clear();
    if (!announced_ || noticed_ != scrape_failure::none) {
      notice_ = noticed_ != scrape_failure::none && down_since_s_
                    ? fmt::format("{}: answering again after {:.0f} s (not attributed)",
                                  view_.id.endpoint, t_s - *down_since_s_)
                    : fmt::format("{}: {}{}", view_.id.endpoint, view_.server,
                                  view_.model_name.empty() ? "" : " serving " + view_.model_name);
      announced_ = true;
      noticed_ = scrape_failure::none;
      down_since_s_.reset();
    }
    previous_ = point{t_s, energy_j, true, page->running};
  } else {
    ++view_.scrape_errors;
    deltas_.forget();
    if (previous_) {
      interval iv;
      iv.start_s = previous_->t_s;
      iv.end_s = t_s;
      iv.energy_j = difference(previous_->energy_j, energy_j);
      add(iv);  // a gap
    }
    view_.up = false;
    view_.last_error = error;
    if (!down_since_s_) down_since_s_ = previous_ ? previous_->t_s : t_s;
    if (failure != noticed_) {
      notice_ =
          fmt::format("{}: {}; no tokens are counted until it answers", view_.id.endpoint, error);
      noticed_ = failure;
    }
    previous_ = point{t_s, energy_j, false, std::nullopt};
  }
  refresh_windows(view_, attribution_);
}

window_totals scrape_model::take_period() {
  window_totals out = period_;
  period_ = {};
  return out;
}

std::optional<std::string> scrape_model::take_notice() {
  auto out = std::move(notice_);
  notice_.reset();
  return out;
}

// --- log_model ------------------------------------------------------------------------------

log_model::log_model(source_identity id, double start_s) : start_s_(start_s), last_s_(start_s) {
  view_.id = std::move(id);
  view_.up = true;
}

double log_model::typical_interval(const std::pair<int, int>& stream) const {
  const auto it = stream_gaps_s_.find(stream);
  if (it == stream_gaps_s_.end() || it->second.empty()) return kDefaultStatsIntervalS;
  std::vector<double> gaps = it->second;
  std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2),
                   gaps.end());
  return gaps[gaps.size() / 2];
}

void log_model::add_span(double start_s, double end_s, interval_state state,
                         const energy_at& energy) {
  if (end_s <= start_s) return;
  interval iv;
  iv.start_s = start_s;
  iv.end_s = end_s;
  iv.energy_j = difference(energy(start_s), energy(end_s));
  iv.state = iv.energy_j ? state : interval_state::gap;
  attribution_.add(iv);
  period_.add(iv);
  last_s_ = end_s;
}

void log_model::flush(const energy_at& energy) {
  if (!open_) return;
  const pending p = *open_;
  open_.reset();
  interval iv;
  iv.start_s = p.start_s;
  iv.end_s = p.end_s;
  iv.energy_j = difference(energy(p.start_s), energy(p.end_s));
  iv.input_tokens = p.input;
  iv.output_tokens = p.output;
  iv.requests = p.requests;
  iv.input_known = p.input_known;
  iv.requests_known = p.requests_known;
  iv.state =
      iv.energy_j ? classify(p.input, p.output, std::nullopt, std::nullopt) : interval_state::gap;
  attribution_.add(iv);
  period_.add(iv);
  last_s_ = p.end_s;
  refresh_windows(view_, attribution_);
}

void log_model::observe(double t_s, const log_tokens& l, const energy_at& energy) {
  ++view_.scrapes;
  view_.server = std::string(to_string(l.server));
  double input = l.input;
  double output = l.output;
  double span = 0.0;
  if (l.rate) {
    const std::pair<int, int> stream{static_cast<int>(l.server), l.stream};
    const auto prev = stream_last_s_.find(stream);
    double gap = prev != stream_last_s_.end() ? t_s - prev->second
                 : l.silent_when_idle         ? typical_interval(stream)
                                              : t_s - start_s_;
    if (prev != stream_last_s_.end()) {
      auto& gaps = stream_gaps_s_[stream];
      gaps.push_back(gap);
      if (gaps.size() > 8) gaps.erase(gaps.begin());
    }
    span = l.silent_when_idle ? std::min(gap, typical_interval(stream)) : gap;
    span = std::max(0.0, std::min(span, t_s - start_s_));
    stream_last_s_[stream] = t_s;
    input *= span;
    output *= span;
  }
  if (open_ && t_s - open_->end_s < kMergeS) {
    // Printed together with the open interval's line: one interval.
    open_->end_s = t_s;
  } else {
    flush(energy);
    // A rate covers its span; a count covers the time since the previous line (the request ran
    // then), and nothing is known before the first line.
    const double from = l.rate ? t_s - span : (seen_ ? last_s_ : t_s);
    if (!seen_) {
      add_span(start_s_, from, interval_state::gap, energy);  // before the server's first line
    } else if (from > last_s_) {
      add_span(last_s_, from, interval_state::idle, energy);  // silent: no request ran
    }
    open_ = pending{std::min(std::max(from, last_s_), t_s), t_s};
  }
  open_->input += input;
  open_->output += output;
  open_->requests += l.requests;
  open_->input_known = open_->input_known || l.input_known;
  open_->requests_known = open_->requests_known || l.requests_known;
  seen_ = true;
}

void log_model::tick(double now_s, const energy_at& energy) {
  if (open_ && now_s - open_->end_s >= kMergeS) flush(energy);
}

void log_model::close(double t_s, const energy_at& energy) {
  flush(energy);
  if (seen_) add_span(last_s_, t_s, interval_state::gap, energy);
  refresh_windows(view_, attribution_);
}

window_totals log_model::take_period() {
  window_totals out = period_;
  period_ = {};
  return out;
}

}  // namespace joules::tokens
