#include "tokens/scrape_source.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "tokens/text_parser.hpp"

namespace joules::tokens {
namespace {

// What joules asks for: the classic text format, which every one of these servers speaks.
constexpr std::string_view kAccept = "text/plain;version=0.0.4;q=1.0,*/*;q=0.1";

}  // namespace

std::chrono::milliseconds scrape_source::timeout_for(std::chrono::milliseconds interval) {
  return std::clamp(interval * 4 / 5, std::chrono::milliseconds(500),
                    std::chrono::milliseconds(5000));
}

scrape_source::scrape_source(scrape_options options, source_identity id,
                             std::vector<std::size_t> devices, const energy_history& energy,
                             board& out, std::size_t slot, source_hooks hooks)
    : options_(std::move(options)),
      devices_(std::move(devices)),
      energy_(energy),
      board_(out),
      slot_(slot),
      hooks_(std::move(hooks)),
      client_(options_.url, {}, {{"Accept", std::string(kAccept)}}),
      model_(std::move(id)) {}

scrape_source::~scrape_source() {
  if (thread_.joinable()) {
    thread_.request_stop();
    client_.cut_off(steady::now());
    thread_.join();
  }
}

void scrape_source::start() {
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

void scrape_source::request_finish(mono_time deadline) {
  {
    std::lock_guard lock(mu_);
    finishing_ = true;
  }
  cv_.notify_all();
  client_.cut_off(deadline);
}

void scrape_source::join() {
  if (thread_.joinable()) thread_.join();
}

void scrape_source::run(const std::stop_token& stop) {
  mono_time next = steady::now();
  while (!stop.stop_requested()) {
    bool last = false;
    {
      std::unique_lock lock(mu_);
      cv_.wait_until(lock, stop, next, [&] { return finishing_; });
      last = finishing_;
    }
    if (stop.stop_requested()) return;
    scrape_once(stop);
    if (last) {
      hand_period(monotonic_seconds(steady::now()));
      return;
    }
    next += options_.interval;
    const mono_time now = steady::now();
    while (next <= now)
      next += options_.interval;
  }
}

void scrape_source::scrape_once(const std::stop_token& stop) {
  const auto timeout = timeout_for(options_.interval);
  const mono_time sent = steady::now();
  const exporter::http_result r =
      client_.get(timeout, std::min(timeout, std::chrono::milliseconds(1000)), kMaxPageBytes);
  const mono_time received = steady::now();
  const mono_time at = sent + (received - sent) / 2;
  const double t_s = monotonic_seconds(at);

  std::optional<page_reading> page;
  scrape_failure failure = scrape_failure::none;
  std::string error;
  if (r.status == 200) {
    page_result p = read_page(r.body, options_.metrics);
    if (p.reading) {
      page = std::move(p.reading);
    } else {
      failure = p.error.starts_with("not Prometheus") ? scrape_failure::not_text
                                                      : scrape_failure::no_counters;
      error = std::move(p.error);
    }
  } else if (r.status == 0) {
    failure = r.too_large ? scrape_failure::too_large : scrape_failure::no_response;
    error = r.cut_off ? "no answer before joules ended" : r.error;
  } else {
    failure = scrape_failure::http_status;
    error = fmt::format("HTTP {}: {}", r.status, exporter::printable_excerpt(r.body, 200));
  }

  energy_.wait_for(t_s, steady::now() + options_.energy_wait, stop);
  model_.observe(t_s, page, failure, error, energy_.at(t_s, devices_));
  board_.publish(slot_, model_.view());
  if (auto line = model_.take_notice(); line && hooks_.notice) hooks_.notice(*line);
  if (!period_started_) {
    period_started_ = true;
    last_period_s_ = t_s;
  } else if (t_s - last_period_s_ >= std::chrono::duration<double>(options_.period).count()) {
    hand_period(t_s);
  }
}

void scrape_source::hand_period(double t_s) {
  last_period_s_ = t_s;
  const window_totals p = model_.take_period();
  if (hooks_.period && p.intervals > 0) hooks_.period(model_.view(), p);
}

}  // namespace joules::tokens
