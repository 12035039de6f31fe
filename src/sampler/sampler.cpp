#include "sampler/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace joules {
namespace {

std::vector<device_info> selected_infos(const backend& b, const std::vector<std::size_t>& devices) {
  std::vector<device_info> out;
  out.reserve(devices.size());
  for (std::size_t i : devices)
    out.push_back(b.devices()[i]);
  return out;
}

}  // namespace

sampler::sampler(backend_factory open, sampler_options options, sampler_clock& clock)
    : clock_(clock), steady_(&clock == &sampler_clock::steady()), options_(options) {
  thread_ = std::jthread(
      [this, open = std::move(open)](std::stop_token stop) { thread_main(std::move(stop), open); });
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return opened_; });
  if (open_error_) {
    lock.unlock();
    thread_.join();
    std::rethrow_exception(open_error_);
  }
}

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

void sampler::thread_main(std::stop_token stop, const backend_factory& open) {
  try {
    backend_ = open();
  } catch (...) {
    open_error_ = std::current_exception();
  }
  {
    std::lock_guard lock(mu_);
    opened_ = true;
  }
  cv_.notify_all();
  if (open_error_) return;
  // Serve jobs until sampling starts (or the sampler is dropped before it does).
  while (true) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] {
      return task_ || !posted_.empty() || start_requested_ || finishing_ || stop.stop_requested();
    });
    if (!posted_.empty()) {
      run_posted(lock);
      continue;
    }
    if (task_) {
      auto task = std::move(task_);
      task_ = nullptr;
      lock.unlock();
      task();
      lock.lock();
      task_done_ = true;
      lock.unlock();
      cv_.notify_all();
      continue;
    }
    if (!start_requested_) {
      tasks_closed_ = true;
      std::deque<std::function<void()>> dropped;
      dropped.swap(posted_);
      lock.unlock();
      backend_.reset();  // nvmlShutdown, on this thread
      return;
    }
    break;
  }
  run(stop);
  std::deque<std::function<void()>> dropped;
  {
    std::lock_guard lock(mu_);
    tasks_closed_ = true;
    dropped.swap(posted_);
    // An abandoned thread is stuck in (or just back from) a driver call: leave the driver alone.
    if (!abandoned_) backend_.reset();
    exited_ = true;
  }
  cv_.notify_all();
}

void sampler::enqueue(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    // Dropped here, not run: its promise breaks (outside the lock, when `task` goes).
    if (tasks_closed_ || abandoned_) return;
    posted_.push_back(std::move(task));
  }
  cv_.notify_all();
}

void sampler::run_posted(std::unique_lock<std::mutex>& lock) {
  while (!posted_.empty() && !abandoned_) {
    auto task = std::move(posted_.front());
    posted_.pop_front();
    lock.unlock();
    task();
    lock.lock();
  }
}

void sampler::run_task(const std::function<void()>& task) {
  std::unique_lock lock(mu_);
  task_ = task;
  task_done_ = false;
  cv_.notify_all();
  cv_.wait(lock, [this] { return task_done_; });
}

void sampler::start(std::vector<std::size_t> devices) {
  devices_ = std::move(devices);
  accounting_.emplace(selected_infos(*backend_, devices_));
  last_power_w_.assign(devices_.size(), std::nullopt);
  last_counter_mj_.assign(devices_.size(), std::nullopt);
  last_counter_uj_.assign(devices_.size(), std::nullopt);
  last_health_.assign(devices_.size(), std::nullopt);
  read_spans_.assign(devices_.size(), read_span{});
  power_spans_.assign(devices_.size(), read_span{});
  counter_read_at_.assign(devices_.size(), mono_time{});
  counter_read_.assign(devices_.size(), true);
  repinned_at_.assign(devices_.size(), mono_time{});
  learn_previous_.assign(devices_.size(), std::nullopt);
  learn_next_.assign(devices_.size(), now());
  learn_wait_.assign(devices_.size(), std::chrono::seconds(0));
  for (std::size_t i : devices_) {
    if (const auto& most = backend_->devices()[i].max_read_interval) {
      const auto cap = std::chrono::duration_cast<std::chrono::milliseconds>(*most);
      options_.interval = std::max(std::chrono::milliseconds(1), std::min(options_.interval, cap));
    }
  }
  std::unique_lock lock(mu_);
  start_requested_ = true;
  cv_.notify_all();
  cv_.wait(lock, [this] { return started_; });
}

void sampler::boundary(mono_time t) {
  accounting_->push_boundary(monotonic_seconds(t));
  request_edge();
}

void sampler::request_edge() {
  // Ask for readings right after the boundary; one wake-up covers any number of boundaries
  // that arrive before the sampler gets to it.  Never blocks the caller.
  if (!edge_requested_.exchange(true)) {
    // Through the mutex, so that the wake-up cannot fall between the sampler's check of the
    // flag and its wait (it would then sleep until the next tick).
    { std::lock_guard lock(mu_); }
    cv_.notify_one();
  }
}

bool sampler::is_finishing() {
  std::lock_guard lock(mu_);
  return finishing_;
}

sampler::wake sampler::wait_until(std::stop_token& stop, mono_time when, bool edges) {
  std::unique_lock lock(mu_);
  const auto woken = [&] {
    return finishing_ || stop.stop_requested() || !posted_.empty() ||
           (edges && edge_requested_.load());
  };
  // Control tasks run here, between readings, and the wait goes on to the same instant.
  while (wait_locked(lock, when, woken) && !posted_.empty() && !finishing_ &&
         !stop.stop_requested()) {
    run_posted(lock);
  }
  if (finishing_ || stop.stop_requested()) return wake::finish;
  if (edges && edge_requested_.exchange(false)) return wake::edge;
  return wake::timeout;
}

std::vector<std::pair<std::uint64_t, double>> sampler::read_round(round_kind kind,
                                                                  const std::vector<bool>& focus,
                                                                  const std::vector<bool>& skip) {
  tick_sample tick;
  tick.power_w.resize(devices_.size());
  std::vector<std::pair<double, device_reading>> readings(devices_.size());
  std::vector<double> spans(devices_.size());
  std::vector<bool> power_only(devices_.size(), false);
  const mono_time begin = now();
  const auto skipped = [&](std::size_t k) { return !skip.empty() && skip[k]; };
  for (std::size_t k = 0; k < devices_.size(); ++k) {
    if (skipped(k)) continue;
    const bool focused = !focus.empty() && focus[k];
    // A read of a costly counter close to an update it cannot pin could have seen that update
    // or not: placed by the prediction, its value could land a whole update off.  A tick's
    // waits for a tick further from the updates; a boundary's for the read edge_burst() makes
    // once the update is past.
    power_only[k] =
        !focused &&
        (kind == round_kind::shape
             ? costly_counter(k)
             : sparse_counter(k) && ((kind == round_kind::tick &&
                                      begin - counter_read_at_[k] < kCostlyCounterTickEvery) ||
                                     near_predicted_update(k, monotonic_seconds(begin))));
    const read_what what = power_only[k] ? read_what::power : read_what::all;
    // Reads of power alone take a time of their own: they are the cheap ones.
    read_span& usual = power_only[k] ? power_spans_[k] : read_spans_[k];
    for (int attempt = 0;; ++attempt) {
      const mono_time a = now();
      device_reading r = backend_->read(devices_[k], what);
      const double span = seconds_between(a, now());
      if (attempt == 0 || (r.status == read_status::ok && span < spans[k])) {
        readings[k] = {monotonic_seconds(a) + 0.5 * span, std::move(r)};
        spans[k] = span;
      }
      // A read stretched by preemption is taken again, the tightest kept (sampler/read_span.hpp).
      if (attempt == read_span::kRereads || readings[k].second.status != read_status::ok ||
          !usual.stretched(spans[k]))
        break;
    }
    usual.kept(spans[k]);
    if (!power_only[k]) counter_read_at_[k] = begin;
    counter_read_[k] = !power_only[k];
    if (readings[k].second.power) tick.power_w[k] = readings[k].second.power->value;
  }
  const mono_time end = now();
  tick.t = monotonic_seconds(begin) + 0.5 * seconds_between(begin, end);

  std::vector<std::pair<std::uint64_t, double>> counters(devices_.size());
  std::vector<window_result> done;
  {
    std::lock_guard lock(mu_);
    if (abandoned_) return counters;
    for (std::size_t k = 0; k < devices_.size(); ++k) {
      device_timeline& tl = accounting_->timeline(k);
      if (skipped(k)) {
        counters[k] = {tl.lost() ? 1U : 0U, tl.counter().last_energy_j()};
        continue;
      }
      if (!power_only[k]) tl.set_read_span(read_spans_[k].usual());
      tl.add(readings[k].first, readings[k].second, spans[k]);
      last_power_w_[k] = tick.power_w[k];
      if (readings[k].second.energy_mj) last_counter_mj_[k] = readings[k].second.energy_mj;
      if (readings[k].second.energy_uj) last_counter_uj_[k] = readings[k].second.energy_uj;
      counters[k] = {tl.lost() ? 1U : 0U, tl.counter().last_energy_j()};
    }
    accounting_->add_tick(std::move(tick));
    accounting_->resolve(/*final=*/false);
    done = accounting_->take_finished();
    if (!on_window_) {
      unclaimed_.insert(unclaimed_.end(), done.begin(), done.end());
      done.clear();
    }
  }
  ticks_.fetch_add(1);
  publish(end);
  for (const auto& w : done)
    on_window_(w);
  if (on_readings_) on_readings_();
  return counters;
}

void sampler::run(std::stop_token stop) {
  {
    // Hold every counter's first values until the start burst has learnt how it advances.
    std::lock_guard lock(mu_);
    for (std::size_t k = 0; k < devices_.size(); ++k)
      accounting_->timeline(k).begin_burst();
  }
  read_round();
  {
    std::lock_guard lock(mu_);
    started_ = true;
  }
  cv_.notify_all();

  const mono_time origin = now();
  if (options_.health_interval) read_health();
  next_health_ = origin + options_.health_interval.value_or(std::chrono::milliseconds(0));
  start_burst(stop, std::vector<bool>(devices_.size(), true));

  mono_time next = origin + options_.interval;
  while (!stop.stop_requested()) {
    const wake w = wait_until(stop, next, /*edges=*/true);
    if (w == wake::finish) break;
    // A boundary's read takes every counter: it holds the energy up to the boundary.
    const auto counters = read_round(w == wake::edge ? round_kind::all : round_kind::tick);
    if (w == wake::edge) {
      edge_burst(stop, /*finishing=*/false);
      continue;  // the regular tick stays on its grid
    }
    learn_when_moving(stop, counters);
    repin(stop);
    if (options_.health_interval && now() >= next_health_) {
      read_health();
      // On a grid, like the ticks: `now + interval` would slip past the next tick and read
      // health every other tick when both intervals are equal (the monitor's case).
      next_health_ += *options_.health_interval;
      const mono_time after = now();
      while (next_health_ <= after)
        next_health_ += *options_.health_interval;
    }
    next += options_.interval;
    // A tick that overran (a slow backend call) skips the slots it missed but stays on the grid.
    const mono_time t = now();
    while (next <= t)
      next += options_.interval;
  }
  if (!is_finishing()) return;

  read_round();
  edge_burst(stop, /*finishing=*/true);
  std::vector<window_result> done;
  {
    std::lock_guard lock(mu_);
    if (abandoned_) return;
    accounting_->resolve(/*final=*/true);
    done = accounting_->take_finished();
    unclaimed_.insert(unclaimed_.end(), done.begin(), done.end());
    done_ = true;
  }
  cv_.notify_all();
}

std::vector<window_result> sampler::finish(mono_time end) {
  accounting_->push_boundary(monotonic_seconds(end));
  std::unique_lock lock(mu_);
  finishing_ = true;
  cv_.notify_all();
  const auto budget = options_.finish_timeout + options_.end_burst_max;
  if (!wait_locked(lock, now() + budget, [this] { return done_; })) {
    // Stuck in a backend call (a hung driver): compute what can be known without it.  The thread
    // is left behind; it checks abandoned_ before touching anything when it wakes up.
    abandoned_ = true;
    accounting_->resolve(/*final=*/true);
    auto windows = accounting_->take_finished();
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

bool sampler::stop(std::chrono::milliseconds grace) {
  if (!thread_.joinable()) return !abandoned_;
  std::unique_lock lock(mu_);
  if (!started_) return true;  // not sampling: the destructor ends the thread
  thread_.request_stop();
  cv_.notify_all();  // a wait_until() in progress re-checks the stop token
  if (!wait_locked(lock, now() + grace, [this] { return exited_; })) {
    // Stuck in a backend call: the thread checks abandoned_ before touching anything when it
    // comes back, and never calls the driver again.
    abandoned_ = true;
    lock.unlock();
    thread_.detach();
    return false;
  }
  lock.unlock();
  thread_.join();
  return true;
}

void sampler::read_health() {
  // Dozens of driver calls a GPU: on 8 GPUs, milliseconds.  When the run ends meanwhile (a
  // command that exits at once), the devices not read yet keep their last reading, so that
  // the end's reads and the summary are not held up by readings no record will carry.
  std::vector<std::optional<health_reading>> h(devices_.size());
  for (std::size_t k = 0; k < devices_.size() && !is_finishing(); ++k)
    h[k] = backend_->read_health(devices_[k]);
  {
    std::lock_guard lock(mu_);
    if (abandoned_) return;
    bool every = true;
    for (std::size_t k = 0; k < devices_.size(); ++k) {
      if (h[k]) last_health_[k] = std::move(*h[k]);
      every = every && h[k].has_value();
    }
    if (every) ++health_rounds_;
  }
  publish(now());
}

void sampler::publish(mono_time taken) {
  auto snap = std::make_shared<sampler_snapshot>();
  snap->taken = taken;
  snap->ticks = ticks_.load();
  snap->devices.resize(devices_.size());
  {
    std::lock_guard lock(mu_);
    snap->health_rounds = health_rounds_;
    for (std::size_t k = 0; k < devices_.size(); ++k) {
      const device_timeline& tl = accounting_->timeline(k);
      auto& d = snap->devices[k];
      d.lost = tl.lost();
      d.silent = tl.silent_at().has_value();
      d.power_w = last_power_w_[k];
      d.counter_mj = last_counter_mj_[k];
      d.counter_uj = last_counter_uj_[k];
      d.health = last_health_[k];
      if (tl.has_readings()) d.energy_j = tl.energy_at(tl.last_good_t(), /*final=*/true);
    }
  }
  std::lock_guard lock(snapshot_mu_);
  snapshot_ = std::move(snap);
}

std::optional<std::vector<double>> sampler::energy_at(mono_time t) const {
  const double ts = monotonic_seconds(t);
  std::lock_guard lock(mu_);
  if (!accounting_ || abandoned_) return std::nullopt;
  std::vector<double> out;
  out.reserve(accounting_->device_count());
  double newest = -1.0;
  for (std::size_t k = 0; k < accounting_->device_count(); ++k)
    newest = std::max(newest, accounting_->timeline(k).last_good_t());
  // Readings older than this may have been dropped (accounting keeps ten seconds at least).
  if (ts < newest - std::chrono::duration<double>(kEnergyHistory).count()) return std::nullopt;
  for (std::size_t k = 0; k < accounting_->device_count(); ++k) {
    const device_timeline& tl = accounting_->timeline(k);
    if (!tl.has_readings() && tl.lost()) {
      out.push_back(0.0);  // lost before its first reading: no energy of it is known
      continue;
    }
    if (!tl.has_readings()) return std::nullopt;
    const bool frozen = tl.lost() || tl.silent_at().has_value();
    if (!frozen && ts > tl.last_good_t()) return std::nullopt;
    const auto e = tl.energy_at(ts, frozen);
    if (!e) return std::nullopt;
    out.push_back(*e);
  }
  return out;
}

std::shared_ptr<const sampler_snapshot> sampler::snapshot() const {
  std::lock_guard lock(snapshot_mu_);
  return snapshot_;
}

}  // namespace joules
