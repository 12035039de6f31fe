#include "tokens/scrape_source.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "tokens/text_parser.hpp"

namespace joules::tokens {
namespace {

// What joules asks for: the classic text format, which every one of these servers speaks.
constexpr std::string_view kAccept = "text/plain;version=0.0.4;q=1.0,*/*;q=0.1";
// How often scrapes waiting for their energy look again.
constexpr std::chrono::milliseconds kSettlePoll{20};
// Scrapes waiting for their energy at most (a sampler that publishes nothing).
constexpr std::size_t kMaxPending = 4096;

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
    deadline_ = deadline;
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
      // Between scrapes, the queue is looked at every kSettlePoll until its energy is known.
      const mono_time wake = pending_.empty() ? next : std::min(next, steady::now() + kSettlePoll);
      std::unique_lock lock(mu_);
      cv_.wait_until(lock, stop, wake, [&] { return finishing_; });
      last = finishing_;
    }
    if (stop.stop_requested()) return;
    if (last) {
      // The last scrape at once, and the exact energy of every scrape waited for (the sampler
      // still runs), within the budget finish() gave.
      scrape_once();
      settle(deadline_, stop);
      hand_period(monotonic_seconds(steady::now()));
      return;
    }
    if (steady::now() >= next) {
      scrape_once();
      next += options_.interval;
      const mono_time now = steady::now();
      while (next <= now)
        next += options_.interval;
    }
    settle(std::nullopt, stop);
  }
}

void scrape_source::scrape_once() {
  const auto timeout = timeout_for(options_.interval);
  const mono_time sent = steady::now();
  const exporter::http_result r =
      client_.get(timeout, std::min(timeout, std::chrono::milliseconds(1000)), kMaxPageBytes);
  const mono_time received = steady::now();
  pending p{
      monotonic_seconds(sent + (received - sent) / 2), std::nullopt, scrape_failure::none, {}};
  if (r.status == 200) {
    page_result page = read_page(r.body, options_.metrics);
    if (page.reading) {
      p.page = std::move(page.reading);
    } else {
      p.failure = page.error.starts_with("not Prometheus") ? scrape_failure::not_text
                                                           : scrape_failure::no_counters;
      p.error = std::move(page.error);
    }
  } else if (r.status == 0) {
    p.failure = r.too_large ? scrape_failure::too_large : scrape_failure::no_response;
    p.error = r.cut_off ? "no answer before joules ended" : r.error;
  } else {
    p.failure = scrape_failure::http_status;
    p.error = fmt::format("HTTP {}: {}", r.status, exporter::printable_excerpt(r.body, 200));
  }
  pending_.push_back(std::move(p));
  // A sampler that publishes nothing (a hung driver) must not make the queue grow for ever.
  while (pending_.size() > kMaxPending) {
    observe(pending_.front(), std::nullopt);
    pending_.pop_front();
  }
}

void scrape_source::settle(std::optional<mono_time> until, const std::stop_token& stop) {
  const double wait_s = std::chrono::duration<double>(options_.energy_wait).count();
  while (!pending_.empty() && !stop.stop_requested()) {
    const pending& p = pending_.front();
    std::optional<double> energy = energy_.exact_at(p.t_s, devices_);
    if (!energy) {
      const mono_time now = steady::now();
      if (until && now < *until) {
        std::unique_lock lock(mu_);
        cv_.wait_until(lock, stop, std::min(*until, now + kSettlePoll), [] { return false; });
        continue;
      }
      if (!until && monotonic_seconds(now) - p.t_s < wait_s) return;  // not yet
      energy = energy_.at(p.t_s, devices_);  // the snapshots' interpolation, or unknown
    }
    observe(p, energy);
    pending_.pop_front();
  }
}

void scrape_source::observe(const pending& p, std::optional<double> energy_j) {
  model_.observe(p.t_s, p.page, p.failure, p.error, energy_j);
  board_.publish(slot_, model_.view());
  if (auto line = model_.take_notice(); line && hooks_.notice) hooks_.notice(*line);
  if (!period_started_) {
    period_started_ = true;
    last_period_s_ = p.t_s;
  } else if (p.t_s - last_period_s_ >= std::chrono::duration<double>(options_.period).count()) {
    hand_period(p.t_s);
  }
}

void scrape_source::hand_period(double t_s) {
  last_period_s_ = t_s;
  const window_totals p = model_.take_period();
  if (hooks_.period && p.intervals > 0) hooks_.period(model_.view(), p);
}

}  // namespace joules::tokens
