#include "tokens/log_source.hpp"

#include <fmt/format.h>

namespace joules::tokens {
namespace {

// How often an idle source looks whether its open interval can be closed.
constexpr std::chrono::milliseconds kTick{250};

}  // namespace

log_source::log_source(source_identity id, std::vector<std::size_t> devices,
                       const energy_history& energy, board& out, std::size_t slot,
                       source_hooks hooks, std::chrono::milliseconds period,
                       std::chrono::milliseconds energy_wait)
    : devices_(std::move(devices)),
      energy_(energy),
      board_(out),
      slot_(slot),
      hooks_(std::move(hooks)),
      period_(period),
      energy_wait_(energy_wait),
      id_(std::move(id)) {}

log_source::~log_source() {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
}

void log_source::start(mono_time t) {
  model_.emplace(id_, monotonic_seconds(t));
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

void log_source::push(mono_time t, const log_tokens& tokens) {
  {
    std::lock_guard lock(mu_);
    queue_.emplace_back(monotonic_seconds(t), tokens);
  }
  cv_.notify_all();
}

void log_source::finish(mono_time end, std::chrono::milliseconds budget) {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    end_s_ = monotonic_seconds(end);
    energy_deadline_ = steady::now() + budget;
  }
  cv_.notify_all();
  thread_.join();
}

std::optional<double> log_source::energy_at(double t_s, const std::stop_token& stop) const {
  mono_time deadline = steady::now() + energy_wait_;
  {
    std::lock_guard lock(mu_);
    deadline = std::min(deadline, energy_deadline_);
  }
  energy_.wait_for(t_s, deadline, stop);
  return energy_.at(t_s, devices_);
}

void log_source::run(const std::stop_token& stop) {
  const auto energy = [&](double t_s) { return energy_at(t_s, stop); };
  double last_period_s = model_->view().run.start_s;
  bool announced = false;
  while (!stop.stop_requested()) {
    std::deque<std::pair<double, log_tokens>> lines;
    std::optional<double> end;
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, stop, kTick, [&] { return !queue_.empty() || end_s_.has_value(); });
      lines.swap(queue_);
      end = end_s_;
    }
    for (const auto& [t_s, tokens] : lines) {
      model_->observe(t_s, tokens, energy);
      if (!announced && hooks_.notice) {
        hooks_.notice(fmt::format(
            "counting tokens from {}'s log lines: estimates (docs/inference.md); --tokens-from "
            "URL counts them from its /metrics",
            to_string(tokens.server)));
        announced = true;
      }
    }
    const double now_s = monotonic_seconds(steady::now());
    if (end) {
      model_->close(*end, energy);
    } else {
      model_->tick(now_s, energy);
    }
    if (model_->seen()) board_.publish(slot_, model_->view());
    const bool period_due = now_s - last_period_s >= std::chrono::duration<double>(period_).count();
    if ((period_due || end) && hooks_.period) {
      last_period_s = now_s;
      const window_totals p = model_->take_period();
      if (p.intervals > 0) hooks_.period(model_->view(), p);
    }
    if (end) return;
  }
}

}  // namespace joules::tokens
