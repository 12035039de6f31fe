#include "tokens/energy_history.hpp"

#include <algorithm>

namespace joules::tokens {

energy_history::energy_history(std::size_t devices, exact_source exact, double keep_s)
    : devices_(devices), exact_(std::move(exact)), keep_s_(keep_s), last_(devices) {}

std::optional<double> energy_history::exact_at(double t_s,
                                               std::span<const std::size_t> devices) const {
  if (!exact_) return std::nullopt;
  const auto all = exact_(t_s);
  if (!all) return std::nullopt;
  double e = 0.0;
  for (std::size_t d : devices) {
    if (d >= all->size()) return std::nullopt;
    e += (*all)[d];
  }
  return e;
}

void energy_history::push(double t_s, std::span<const std::optional<double>> energy_j) {
  {
    std::lock_guard lock(mu_);
    if (!points_.empty() && t_s <= points_.back().t_s) return;
    point p{t_s, std::vector<double>(devices_, 0.0)};
    for (std::size_t k = 0; k < devices_; ++k) {
      if (k < energy_j.size() && energy_j[k]) last_[k] = energy_j[k];
      p.energy_j[k] = last_[k].value_or(0.0);
    }
    points_.push_back(std::move(p));
    while (points_.size() > 2 && points_.front().t_s < t_s - keep_s_)
      points_.pop_front();
  }
  cv_.notify_all();
}

std::optional<double> energy_history::at(double t_s, std::span<const std::size_t> devices) const {
  std::lock_guard lock(mu_);
  if (points_.empty() || t_s < points_.front().t_s || t_s > points_.back().t_s) return std::nullopt;
  const auto sum = [&](const point& p) {
    double e = 0.0;
    for (std::size_t d : devices) {
      if (d < p.energy_j.size()) e += p.energy_j[d];
    }
    return e;
  };
  // The first point at or after t_s, and the one before it.
  const auto after = std::lower_bound(points_.begin(), points_.end(), t_s,
                                      [](const point& p, double t) { return p.t_s < t; });
  if (after->t_s == t_s || after == points_.begin()) return sum(*after);
  const point& a = *(after - 1);
  const point& b = *after;
  const double f = (t_s - a.t_s) / (b.t_s - a.t_s);
  const double ea = sum(a);
  return ea + f * (sum(b) - ea);
}

bool energy_history::wait_for(double t_s, mono_time deadline, const std::stop_token& stop) const {
  std::unique_lock lock(mu_);
  return cv_.wait_until(
             lock, stop, deadline,
             [&] { return closed_ || (!points_.empty() && points_.back().t_s >= t_s); }) &&
         !points_.empty() && points_.back().t_s >= t_s;
}

void energy_history::close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

std::optional<double> energy_history::newest_s() const {
  std::lock_guard lock(mu_);
  if (points_.empty()) return std::nullopt;
  return points_.back().t_s;
}

}  // namespace joules::tokens
