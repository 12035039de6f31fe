#include "sampler/sampler.hpp"

#include <algorithm>

namespace joules {
namespace {

std::vector<device_info> selected_infos(const backend& b, const std::vector<std::size_t>& devices) {
  std::vector<device_info> out;
  out.reserve(devices.size());
  for (std::size_t i : devices) out.push_back(b.devices()[i]);
  return out;
}

// A counter has shown enough of itself during the start burst: new values at nearly every read
// (it advances continuously) or several separate updates (it advances in steps).
bool counter_characterised(std::size_t reads, std::size_t changes) {
  const bool continuous = reads >= 10 && changes + 2 >= reads;
  const bool stepped = changes >= 4 && changes + 2 < reads;
  return continuous || stepped;
}

}  // namespace

sampler::sampler(backend& b, std::vector<std::size_t> devices, sampler_options options)
    : backend_(b),
      devices_(std::move(devices)),
      options_(options),
      accounting_(selected_infos(b, devices_)),
      last_power_w_(devices_.size()) {}

sampler::~sampler() {
  if (thread_.joinable()) {
    {
      std::lock_guard lock(mu_);
      finishing_ = true;
    }
    cv_.notify_all();
    thread_.request_stop();
  }
}

void sampler::start() {
  thread_ = std::jthread([this](std::stop_token stop) { run(std::move(stop)); });
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return started_; });
}

void sampler::boundary(mono_time t) { accounting_.push_boundary(monotonic_seconds(t)); }

bool sampler::wait_until(std::stop_token& stop, mono_time when) {
  std::unique_lock lock(mu_);
  cv_.wait_until(lock, when, [&] { return finishing_ || stop.stop_requested(); });
  return finishing_ || stop.stop_requested();
}

bool sampler::is_finishing() {
  std::lock_guard lock(mu_);
  return finishing_;
}

void sampler::read_tick() {
  tick_sample tick;
  tick.power_w.resize(devices_.size());
  std::vector<std::pair<double, device_reading>> readings(devices_.size());
  const mono_time begin = steady::now();
  for (std::size_t k = 0; k < devices_.size(); ++k) {
    const mono_time a = steady::now();
    readings[k].second = backend_.read(devices_[k], read_what::all);
    const mono_time b = steady::now();
    readings[k].first = monotonic_seconds(a) + 0.5 * seconds_between(a, b);
    if (readings[k].second.power) tick.power_w[k] = readings[k].second.power->value;
  }
  const mono_time end = steady::now();
  tick.t = monotonic_seconds(begin) + 0.5 * seconds_between(begin, end);

  std::vector<window_result> done;
  {
    std::lock_guard lock(mu_);
    if (abandoned_) return;
    for (std::size_t k = 0; k < devices_.size(); ++k) {
      accounting_.timeline(k).add(readings[k].first, readings[k].second);
      last_power_w_[k] = tick.power_w[k];
    }
    accounting_.add_tick(std::move(tick));
    accounting_.resolve(/*final=*/false);
    done = accounting_.take_finished();
    if (!on_window_) {
      unclaimed_.insert(unclaimed_.end(), done.begin(), done.end());
      done.clear();
    }
  }
  ticks_.fetch_add(1);
  publish(end);
  for (const auto& w : done) on_window_(w);
}

void sampler::burst(std::stop_token& stop, std::chrono::milliseconds max, bool stepped_only) {
  std::vector<std::size_t> which;
  std::vector<double> start_value;
  {
    std::lock_guard lock(mu_);
    for (std::size_t k = 0; k < devices_.size(); ++k) {
      const device_timeline& tl = accounting_.timeline(k);
      if (!backend_.devices()[devices_[k]].has_energy_counter || tl.lost()) continue;
      if (stepped_only && tl.counter().model() != counter_track::model_kind::periodic) continue;
      which.push_back(k);
      start_value.push_back(tl.counter().last_energy_j());
      accounting_.timeline(k).begin_burst();
    }
  }
  std::vector<std::size_t> reads(which.size(), 0);
  std::vector<std::size_t> changes(which.size(), 0);
  std::vector<double> previous = start_value;
  std::vector<bool> finished(which.size(), false);
  const mono_time deadline = steady::now() + max;
  mono_time next = steady::now();
  while (!which.empty()) {
    bool all = true;
    for (std::size_t j = 0; j < which.size(); ++j) {
      if (finished[j]) continue;
      const std::size_t k = which[j];
      const mono_time a = steady::now();
      const device_reading r = backend_.read(devices_[k], read_what::counter);
      const mono_time b = steady::now();
      std::lock_guard lock(mu_);
      if (abandoned_) return;
      device_timeline& tl = accounting_.timeline(k);
      tl.add(monotonic_seconds(a) + 0.5 * seconds_between(a, b), r);
      ++reads[j];
      const double now_value = tl.counter().last_energy_j();
      if (now_value != previous[j]) ++changes[j];
      previous[j] = now_value;
      if (tl.lost() || !r.energy_mj) {
        finished[j] = true;
      } else if (stepped_only) {
        finished[j] = now_value != start_value[j];
      } else {
        finished[j] = counter_characterised(reads[j], changes[j]);
      }
      all = all && finished[j];
    }
    if (all) break;
    next += options_.burst_spacing;
    if (next >= deadline) break;
    // The start burst gives way to a finishing run; the end burst runs to its end.
    if (!stepped_only) {
      if (wait_until(stop, next)) break;
    } else {
      std::this_thread::sleep_until(next);
    }
  }
  std::lock_guard lock(mu_);
  if (abandoned_) return;
  for (std::size_t k : which) accounting_.timeline(k).end_burst();
}

void sampler::run(std::stop_token stop) {
  {
    // Hold every counter's first values until the start burst has learnt how it advances.
    std::lock_guard lock(mu_);
    for (std::size_t k = 0; k < devices_.size(); ++k) accounting_.timeline(k).begin_burst();
  }
  read_tick();
  {
    std::lock_guard lock(mu_);
    started_ = true;
  }
  cv_.notify_all();

  const mono_time origin = steady::now();
  burst(stop, options_.start_burst_max, /*stepped_only=*/false);
  {
    // Counters not seen during the burst (a finish during it, or devices without a counter).
    std::lock_guard lock(mu_);
    if (abandoned_) return;
    for (std::size_t k = 0; k < devices_.size(); ++k) accounting_.timeline(k).end_burst();
  }

  mono_time next = origin + options_.interval;
  while (!stop.stop_requested()) {
    if (wait_until(stop, next)) break;
    read_tick();
    next += options_.interval;
    // A tick that overran (a slow backend call) skips the slots it missed but stays on the grid.
    const mono_time now = steady::now();
    while (next <= now) next += options_.interval;
  }
  if (!is_finishing()) return;

  read_tick();
  burst(stop, options_.end_burst_max, /*stepped_only=*/true);
  std::vector<window_result> done;
  {
    std::lock_guard lock(mu_);
    if (abandoned_) return;
    accounting_.resolve(/*final=*/true);
    done = accounting_.take_finished();
    unclaimed_.insert(unclaimed_.end(), done.begin(), done.end());
    done_ = true;
  }
  cv_.notify_all();
}

std::vector<window_result> sampler::finish(mono_time end) {
  boundary(end);
  std::unique_lock lock(mu_);
  finishing_ = true;
  cv_.notify_all();
  const auto budget = options_.finish_timeout + options_.end_burst_max;
  if (!cv_.wait_for(lock, budget, [this] { return done_; })) {
    // Stuck in a backend call (a hung driver): compute what can be known without it.  The thread
    // is left behind; it checks abandoned_ before touching anything when it wakes up.
    abandoned_ = true;
    accounting_.resolve(/*final=*/true);
    auto windows = accounting_.take_finished();
    unclaimed_.insert(unclaimed_.end(), windows.begin(), windows.end());
    lock.unlock();
    thread_.detach();
  } else {
    lock.unlock();
    thread_.join();
  }
  std::lock_guard relock(mu_);
  std::vector<window_result> out;
  out.swap(unclaimed_);
  return out;
}

void sampler::publish(mono_time taken) {
  auto snap = std::make_shared<sampler_snapshot>();
  snap->taken = taken;
  snap->ticks = ticks_.load();
  snap->devices.resize(devices_.size());
  {
    std::lock_guard lock(mu_);
    for (std::size_t k = 0; k < devices_.size(); ++k) {
      const device_timeline& tl = accounting_.timeline(k);
      auto& d = snap->devices[k];
      d.lost = tl.lost();
      d.power_w = last_power_w_[k];
      if (tl.has_readings()) d.energy_j = tl.energy_at(tl.last_good_t(), /*final=*/true);
    }
  }
  std::lock_guard lock(snapshot_mu_);
  snapshot_ = std::move(snap);
}

std::shared_ptr<const sampler_snapshot> sampler::snapshot() const {
  std::lock_guard lock(snapshot_mu_);
  return snapshot_;
}

}  // namespace joules
