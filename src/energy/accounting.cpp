#include "energy/accounting.hpp"

#include <algorithm>
#include <cmath>

namespace joules {
namespace {

microjoules to_microjoules(double j) {
  return static_cast<microjoules>(std::llround(j * 1e6));
}

void raise_peak(std::optional<double>& peak, double v) {
  if (!peak || v > *peak) peak = v;
}

}  // namespace

accounting::accounting(const std::vector<device_info>& devices) {
  timelines_.reserve(devices.size());
  for (const auto& d : devices)
    timelines_.emplace_back(d);
}

void accounting::push_boundary(double t) {
  std::lock_guard lock(incoming_mu_);
  incoming_.push_back(t);
}

void accounting::drain_incoming() {
  std::deque<double> in;
  {
    std::lock_guard lock(incoming_mu_);
    in.swap(incoming_);
  }
  for (double t : in) {
    boundary b;
    b.t = boundaries_.empty() ? t : std::max(t, boundaries_.back().t);
    b.stats.device_peak_w.resize(timelines_.size());
    boundaries_.push_back(std::move(b));
  }
}

void accounting::add_tick(tick_sample tick) {
  drain_incoming();
  latest_tick_t_ = std::max(latest_tick_t_, tick.t);
  // A tick is attributed to a window one tick late, so that a boundary stamped just before the
  // tick but handed over just after it still splits the right way.
  if (pending_tick_) attribute(*pending_tick_);
  pending_tick_ = std::move(tick);
}

void accounting::attribute(const tick_sample& tick) {
  last_attributed_t_ = tick.t;
  if (boundaries_.empty() || tick.t < boundaries_.front().t) return;  // before the first window
  // The window a tick belongs to starts at the last boundary at or before it.
  auto it = std::upper_bound(boundaries_.begin(), boundaries_.end(), tick.t,
                             [](double t, const boundary& b) { return t < b.t; });
  window_stats& s = (it - 1)->stats;
  ++s.ticks;
  double sum = 0.0;
  bool any = false;
  for (std::size_t d = 0; d < tick.power_w.size() && d < s.device_peak_w.size(); ++d) {
    if (!tick.power_w[d]) continue;
    raise_peak(s.device_peak_w[d], *tick.power_w[d]);
    sum += *tick.power_w[d];
    any = true;
  }
  if (any) raise_peak(s.node_peak_w, sum);
}

void accounting::resolve(bool final) {
  drain_incoming();
  if (final && pending_tick_) {
    attribute(*pending_tick_);
    pending_tick_.reset();
  }
  for (auto& b : boundaries_) {
    if (b.resolved) continue;
    // A device that stays silent (errors, a counter that stopped moving) must not hold every
    // later window hostage: past the deadline its energy is extrapolated or left unknown.
    const bool force = final || latest_tick_t_ - b.t > kResolveDeadlineS;
    std::vector<std::optional<microjoules>> values(timelines_.size());
    bool known = true;
    for (std::size_t d = 0; d < timelines_.size(); ++d) {
      const device_timeline& tl = timelines_[d];
      if (!tl.has_readings()) {
        if (!force && !tl.lost()) {
          known = false;
          break;
        }
        continue;  // never read: unknown, not zero
      }
      const auto e = tl.energy_at(b.t, force);
      // A counter's first value beside the boundary that a later pin could still move by a whole
      // update (device_timeline::settled_at) is worth waiting for, up to the deadline.
      if (!e || (!force && !tl.settled_at(b.t))) {
        known = false;
        break;
      }
      values[d] = to_microjoules(*e);
    }
    if (!known) break;  // boundaries resolve in order
    // Energy only accumulates.  A boundary resolved after a later reading moved the placement
    // of a counter update (a pin that refined the update period) can come out a little below
    // the boundary before it, resolved with the earlier placement; the window between them is
    // then empty rather than negative, and what it was short of goes to the next one.
    last_resolved_uj_.resize(timelines_.size());
    for (std::size_t d = 0; d < timelines_.size(); ++d) {
      if (values[d] && last_resolved_uj_[d])
        values[d] = std::max(*values[d], *last_resolved_uj_[d]);
      if (values[d]) last_resolved_uj_[d] = values[d];
    }
    b.energy_uj = std::move(values);
    b.resolved = true;
  }
  finish_windows(final);
  // Readings are needed only to place boundaries that have no energy yet: those waiting, and
  // those still to come, which are stamped at most a few ticks before the sampler sees them.
  // Whatever is older goes, so that memory stays flat over a run of any length (`run` keeps its
  // start boundary open for hours, `monitor` and `serve` have none).  Cumulative energy survives
  // trimming: anchors and power samples carry it.
  // (A new boundary never lands before the last one: drain_incoming() keeps them in order.)
  const auto waiting = std::find_if(boundaries_.begin(), boundaries_.end(),
                                    [](const boundary& b) { return !b.resolved; });
  double keep_from = latest_tick_t_ - kLateBoundaryS;
  if (waiting != boundaries_.end()) {
    keep_from = waiting->t;
  } else if (!boundaries_.empty()) {
    keep_from = std::max(keep_from, boundaries_.back().t);
  }
  if (keep_from_) keep_from = std::min(keep_from, *keep_from_);
  for (auto& tl : timelines_)
    tl.trim_before(keep_from);
}

void accounting::finish_windows(bool final) {
  while (boundaries_.size() >= 2 && boundaries_[0].resolved && boundaries_[1].resolved) {
    const boundary& a = boundaries_[0];
    const boundary& b = boundaries_[1];
    // Ticks up to the end of the window must have been attributed first.
    if (!final && last_attributed_t_ < b.t) break;
    window_result w;
    w.index = next_index_++;
    w.start_t = a.t;
    w.end_t = b.t;
    w.ticks = a.stats.ticks;
    w.peak_power_w = a.stats.node_peak_w;
    w.devices.resize(timelines_.size());
    for (std::size_t d = 0; d < timelines_.size(); ++d) {
      device_window& dw = w.devices[d];
      const device_timeline& tl = timelines_[d];
      if (a.energy_uj[d] && b.energy_uj[d]) {
        dw.energy_uj = *b.energy_uj[d] - *a.energy_uj[d];
        w.energy_uj += *dw.energy_uj;
      }
      dw.peak_power_w = a.stats.device_peak_w[d];
      dw.method = tl.has_readings() ? tl.method_between(a.t, b.t) : energy_method::none;
      dw.lost = tl.lost_at() && *tl.lost_at() < b.t;
    }
    finished_.push_back(std::move(w));
    boundaries_.pop_front();
  }
}

std::vector<window_result> accounting::take_finished() {
  std::vector<window_result> out;
  out.swap(finished_);
  return out;
}

void join_window(window_result& run, const window_result& w) {
  run.start_t = std::min(run.start_t, w.start_t);
  run.end_t = std::max(run.end_t, w.end_t);
  run.energy_uj += w.energy_uj;
  run.ticks += w.ticks;
  if (w.peak_power_w && (!run.peak_power_w || *w.peak_power_w > *run.peak_power_w))
    run.peak_power_w = w.peak_power_w;
  for (std::size_t d = 0; d < run.devices.size() && d < w.devices.size(); ++d) {
    device_window& a = run.devices[d];
    const device_window& b = w.devices[d];
    if (b.energy_uj) a.energy_uj = a.energy_uj.value_or(0) + *b.energy_uj;
    if (b.peak_power_w && (!a.peak_power_w || *b.peak_power_w > *a.peak_power_w))
      a.peak_power_w = b.peak_power_w;
    if (a.method != b.method && b.method != energy_method::none) {
      a.method = a.method == energy_method::none ? b.method : energy_method::polled;
    }
    a.lost = a.lost || b.lost;
  }
}

}  // namespace joules
