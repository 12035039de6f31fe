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

// A counter has shown enough of itself during the start burst: new values at nearly every read
// (it advances continuously) or several separate updates (it advances in steps).
bool counter_characterised(std::size_t reads, std::size_t changes) {
  const bool continuous = reads >= 10 && changes + 2 >= reads;
  const bool stepped = changes >= 4 && changes + 2 < reads;
  return continuous || stepped;
}

// A counter that starts moving after the start burst is read densely again, at most this often.
constexpr std::chrono::seconds kLearnAgain{10};
// A burst that saw a counter move and still learnt nothing (the machine was busy: reads came
// late) is tried again at once, then after kLearnAgain, twice as long each time up to this; and
// this long straight away when its reads could not have pinned an update (a round of every
// device took longer than the narrow bracket: many GPUs, or a slow driver).  Without it, such a
// node would be read back to back for 350 ms every 10 s for the whole run, learning nothing.
constexpr std::chrono::seconds kLearnAgainMost{600};

// An energy counter whose reads usually take longer than this is costly: NVML's on an H100
// takes 3.9 ms of CPU a read, where instantaneous power takes 2.5 µs (docs/nvml-notes.md §2.4);
// read every 100 ms on 8 GPUs, that would be a third of a core.  The regular ticks then read it
// at most every kCostlyCounterEvery and power alone between, and an edge burst reads power
// alone until the update it waits for is near.  The energy between two counter readings is
// shaped by the power read between them (energy/device_timeline.cpp); a boundary's own read,
// the reads that pin the update after it, and the first and last reads of a run still read the
// counter, so totals and windows stay the counter's.
constexpr double kCostlyReadS = 0.001;
constexpr std::chrono::seconds kCostlyCounterEvery{1};

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

double sampler::update_margin_s(std::size_t k, double t) const {
  // How far the update may be from its prediction, and half a read either side for where in
  // the read the value was taken.
  return accounting_->timeline(k).counter().prediction_error_s(t) + read_spans_[k].usual();
}

bool sampler::near_predicted_update(std::size_t k, double t) const {
  const counter_track& c = accounting_->timeline(k).counter();
  const auto next = c.next_update_after(t);
  if (!next) return false;
  const double margin = update_margin_s(k, t);
  return *next - t < margin || t - (*next - c.period_s()) < margin;
}

bool sampler::costly_counter(std::size_t k) const {
  const device_info& info = backend_->devices()[devices_[k]];
  return info.has_energy_counter && !info.counter_continuous && info.power != power_source::none &&
         read_spans_[k].usual() > kCostlyReadS;
}

std::vector<std::pair<std::uint64_t, double>> sampler::read_round(round_kind kind,
                                                                  const std::vector<bool>& focus) {
  tick_sample tick;
  tick.power_w.resize(devices_.size());
  std::vector<std::pair<double, device_reading>> readings(devices_.size());
  std::vector<double> spans(devices_.size());
  std::vector<bool> power_only(devices_.size(), false);
  const mono_time begin = now();
  for (std::size_t k = 0; k < devices_.size(); ++k) {
    const bool focused = !focus.empty() && focus[k];
    // A read of a costly counter close to an update it cannot pin could have seen that update
    // or not: placed by the prediction, its value could land a whole update off.  A tick's
    // waits for a tick further from the updates; a boundary's for the read edge_burst() makes
    // once the update is past.
    power_only[k] =
        !focused && costly_counter(k) &&
        (kind == round_kind::shape ||
         (kind == round_kind::tick && begin - counter_read_at_[k] < kCostlyCounterEvery) ||
         near_predicted_update(k, monotonic_seconds(begin)));
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

void sampler::start_burst(std::stop_token& stop, const std::vector<bool>& which) {
  // A round of several costly counters (an H100's: 4 ms a read) reads each of them too seldom to
  // pin its updates.  Where reading one counter and the others' power alone makes a round short
  // enough, each is read densely alone, one after the other (the cheap counters together, first).
  // A driver whose every call is slow gains nothing from that and is read as one group.
  // The round time a burst would have, reading the counter of `focus` (every one: nullopt).
  const auto round_s = [&](std::optional<std::size_t> focus) {
    double s = 0.0;
    for (std::size_t k = 0; k < devices_.size(); ++k) {
      if (accounting_->timeline(k).lost()) continue;
      const bool counter = !focus || k == *focus || !costly_counter(k);
      s += counter ? read_spans_[k].usual() : power_spans_[k].usual();
    }
    return s;
  };
  std::size_t costly = 0;
  double bracket = std::numeric_limits<double>::infinity();
  {
    std::lock_guard lock(mu_);
    for (std::size_t k = 0; k < devices_.size(); ++k) {
      const device_timeline& tl = accounting_->timeline(k);
      if (!which[k] || tl.lost()) continue;
      bracket = std::min(bracket, tl.counter().narrow_bracket_s());
      if (costly_counter(k)) ++costly;
    }
  }
  // How long power alone takes is known after one such round.
  if (costly >= 2 && round_s(std::nullopt) > bracket) read_round(round_kind::shape);
  std::vector<std::vector<bool>> groups;
  {
    std::lock_guard lock(mu_);
    std::vector<bool> rest = which;
    if (costly >= 2 && round_s(std::nullopt) > bracket) {
      for (std::size_t k = 0; k < devices_.size(); ++k) {
        const device_timeline& tl = accounting_->timeline(k);
        if (!which[k] || !costly_counter(k) || tl.lost() ||
            round_s(k) > tl.counter().narrow_bracket_s())
          continue;
        groups.emplace_back(devices_.size(), false);
        groups.back()[k] = true;
        rest[k] = false;
      }
    }
    if (groups.size() < 2) {
      groups.clear();
      rest = which;
    }
    if (std::find(rest.begin(), rest.end(), true) != rest.end())
      groups.insert(groups.begin(), rest);
  }
  bool reading = true;
  for (const auto& group : groups) {
    const std::vector<bool> focus = groups.size() > 1 ? group : std::vector<bool>{};
    reading = burst(stop, group, focus, reading);
  }
  // The dense reads cover the start boundary: no extra edge reads for it.
  edge_requested_.store(false);
}

bool sampler::burst(std::stop_token& stop, const std::vector<bool>& which,
                    const std::vector<bool>& focus, bool reading) {
  std::vector<std::size_t> reads(devices_.size(), 0);
  std::vector<std::size_t> changes(devices_.size(), 0);
  std::vector<double> previous(devices_.size(), 0.0);
  std::vector<bool> counts(devices_.size(), false);
  {
    std::lock_guard lock(mu_);
    for (std::size_t k = 0; k < devices_.size(); ++k) {
      const device_timeline& tl = accounting_->timeline(k);
      const device_info& info = backend_->devices()[devices_[k]];
      // A continuous counter (RAPL) has nothing to show: it advances at every read.
      counts[k] = which[k] && info.has_energy_counter && !info.counter_continuous && !tl.lost();
      previous[k] = tl.counter().last_energy_j();
    }
  }
  const mono_time deadline = now() + options_.start_burst_max;
  mono_time next = now();
  std::vector<bool> moved(devices_.size(), false);
  // The closest two reads of a device came: the time between the starts of two rounds.
  std::optional<mono_time> last_round;
  auto closest = mono_time::duration::max();
  while (reading && std::find(counts.begin(), counts.end(), true) != counts.end()) {
    next += options_.burst_spacing;
    // The limit is time, not rounds: with reads slower than the spacing, `next` lags behind.
    if (next >= deadline || now() >= deadline) break;
    if (wait_until(stop, next, /*edges=*/false) == wake::finish) {
      reading = false;
      break;
    }
    const mono_time round = now();
    if (last_round) closest = std::min(closest, round - *last_round);
    last_round = round;
    const auto counters = read_round(focus.empty() ? round_kind::all : round_kind::shape, focus);
    for (std::size_t k = 0; k < devices_.size(); ++k) {
      if (!counts[k]) continue;
      if (counters[k].first != 0) {
        counts[k] = false;  // lost
        continue;
      }
      ++reads[k];
      if (counters[k].second != previous[k]) {
        ++changes[k];
        moved[k] = true;
      }
      previous[k] = counters[k].second;
      if (counter_characterised(reads[k], changes[k])) counts[k] = false;
    }
  }
  const mono_time t = now();
  std::lock_guard lock(mu_);
  if (abandoned_) return false;
  for (std::size_t k = 0; k < devices_.size(); ++k) {
    if (!which[k]) continue;
    device_timeline& tl = accounting_->timeline(k);
    tl.end_burst();
    if (!moved[k] || tl.counter().model() != counter_track::model_kind::unknown) continue;
    const bool could_pin =
        closest == mono_time::duration::max() ||  // fewer than two rounds: it says nothing
        std::chrono::duration<double>(closest).count() <= tl.counter().narrow_bracket_s();
    const auto wait = could_pin ? learn_wait_[k] : kLearnAgainMost;
    learn_next_[k] = std::max(learn_next_[k], t + wait);
    learn_wait_[k] = std::min(std::max(2 * wait, kLearnAgain), kLearnAgainMost);
  }
  return reading;
}

void sampler::learn_when_moving(std::stop_token& stop,
                                const std::vector<std::pair<std::uint64_t, double>>& counters) {
  // A GPU idle through the start burst (its counter did not move) has not shown how its counter
  // advances; boundaries on it could then only be placed to within an update period.  When its
  // counter starts moving, read it densely once more, at most every kLearnAgain (and less often
  // after bursts that learnt nothing: start_burst).
  const mono_time t = now();
  std::vector<bool> which(devices_.size(), false);
  bool any = false;
  {
    std::lock_guard lock(mu_);
    for (std::size_t k = 0; k < devices_.size(); ++k) {
      const device_timeline& tl = accounting_->timeline(k);
      const device_info& info = backend_->devices()[devices_[k]];
      const bool unknown = tl.counter().model() == counter_track::model_kind::unknown;
      const bool moved = learn_previous_[k] && *learn_previous_[k] != counters[k].second;
      learn_previous_[k] = counters[k].second;
      if (!unknown || !moved || info.counter_continuous || tl.lost() || t < learn_next_[k])
        continue;
      which[k] = true;
      any = true;
      learn_next_[k] = t + kLearnAgain;
      accounting_->timeline(k).begin_burst();
    }
  }
  if (any) start_burst(stop, which);
}

void sampler::repin(std::stop_token& stop) {
  // A costly counter is not read at every tick, so its updates are pinned only at boundaries; a
  // period learnt from the start burst's few slow reads may be off by 3 ms, 30 ms ten periods
  // on, and with no boundary for a while the model would lose track of which update is which.
  // So whenever the drift of a costly counter's prediction one period ahead may exceed half its
  // bracket, one of its updates is pinned: each pin lengthens the baseline the period is
  // measured over, and the pins come further and further apart (on an H100, a few in the first
  // ten seconds, then about one every ten seconds).  One device per tick, and each at most every
  // kCostlyCounterEvery: on a busy machine pins scatter, and pinning more often would not help.
  const double t = monotonic_seconds(now());
  std::optional<std::size_t> due;
  double worst = 0.0;
  {
    std::lock_guard lock(mu_);
    for (std::size_t k = 0; k < devices_.size(); ++k) {
      const device_timeline& tl = accounting_->timeline(k);
      const counter_track& c = tl.counter();
      if (tl.lost() || c.model() != counter_track::model_kind::periodic || !costly_counter(k) ||
          now() - repinned_at_[k] < kCostlyCounterEvery)
        continue;
      // A counter whose ticks all fall close to its updates (the ticks and the updates both
      // every 100 ms) is never read at a tick: pinning an update reads it instead.
      const bool unread = now() - counter_read_at_[k] >= 2 * kCostlyCounterEvery;
      const double error = unread ? c.period_s() : c.drift_error_s(t + c.period_s());
      if ((unread || error > 0.5 * c.narrow_bracket_s()) && error > worst) {
        worst = error;
        due = k;
      }
    }
  }
  if (!due) return;
  repinned_at_[*due] = now();
  edge_burst(stop, /*finishing=*/false, due);
}

void sampler::edge_burst(std::stop_token& stop, bool finishing, std::optional<std::size_t> only) {
  // Devices whose counter advances in steps: read until each has advanced once, so that the
  // update after the boundary is pinned to within a few milliseconds.  Only the reads close to
  // the update the model predicts need to be dense (kPinGuardS before it, every burst_spacing);
  // before that, reads every shape_spacing are enough to shape the energy between the boundary
  // and the update (energy/device_timeline.cpp).  With 100 ms updates that is a fifth of the
  // reads of reading densely all the way, and as much NVML time saved on the node.
  //
  // A costly counter (costly_counter()) is read once, as soon as the update the model predicts
  // after the boundary is surely past (update_margin_s()): its value is then that update's,
  // placed by the model, which repin() keeps within a few milliseconds.  Its power is read at
  // every round.  So a boundary costs one read of it, and on 8 H100s, whose updates fall at
  // different instants, a round holds one 4 ms counter read, not eight.  A repin (`only`)
  // reads its counter densely from as far before the predicted update as the prediction may be
  // off, until two of these reads bracket the update.
  constexpr double kPinGuardS = 0.003;
  struct watched {
    std::size_t k;
    bool settle;         // a costly counter after a boundary: one read past its update
    double from_s;       // dense reads from here (settle: the one read from here)
    double start_value;  // the counter's energy when the burst began
  };
  std::vector<watched> devs;
  double longest_period = 0.0;
  double dense_from = std::numeric_limits<double>::infinity();
  const double now_s = monotonic_seconds(now());
  {
    std::lock_guard lock(mu_);
    for (std::size_t k = 0; k < devices_.size(); ++k) {
      const device_timeline& tl = accounting_->timeline(k);
      const counter_track& c = tl.counter();
      if (tl.lost() || c.model() != counter_track::model_kind::periodic) continue;
      if (only && k != *only) continue;
      longest_period = std::max(longest_period, c.period_s());
      const auto u = c.next_update_after(now_s);
      if (!u) continue;
      watched w{k, false, *u - kPinGuardS, c.last_energy_j()};
      if (costly_counter(k)) {
        const double margin = update_margin_s(k, *u);
        if (only) {
          w.from_s = *u - margin;
        } else {
          // The update just past, when a read now could still miss it or when the boundary's
          // read skipped the counter for being close to it; otherwise the next one.
          const double last = *u - c.period_s();
          const bool skipped = !counter_read_[k] && now_s - last < 0.5 * c.period_s();
          w.settle = true;
          w.from_s = (skipped || now_s - last < update_margin_s(k, last) ? last : *u) + margin;
        }
      }
      if (!w.settle) dense_from = std::min(dense_from, w.from_s);
      devs.push_back(w);
    }
  }
  if (devs.empty()) return;
  const auto limit = std::min<std::chrono::microseconds>(
      options_.end_burst_max,
      std::chrono::microseconds(static_cast<std::int64_t>(1.5e6 * longest_period)));
  const mono_time start = now();
  const mono_time deadline = start + limit;
  const auto at = [&](double from_s) {
    return start + std::chrono::microseconds(static_cast<std::int64_t>(
                       1e6 * std::clamp(from_s - now_s, 0.0, 1.5 * longest_period)));
  };
  const mono_time dense_at = std::isfinite(dense_from) ? at(dense_from) : mono_time::max();
  std::vector<bool> focus(devices_.size(), false);
  std::vector<bool> done(devs.size(), false);
  // Each counter's value at its last read in this burst, from which it must advance.  After a
  // boundary's read (and the run's last) the counters were just read; a repin's counter was
  // last read up to a second ago, so its first read here only starts the bracket.
  std::vector<std::optional<double>> seen(devs.size());
  for (std::size_t j = 0; j < devs.size(); ++j)
    if (!only) seen[j] = devs[j].start_value;
  mono_time next = start;
  while (true) {
    if (next >= dense_at) {
      next += options_.burst_spacing;
    } else {
      next = std::min(next + options_.shape_spacing, dense_at);
    }
    if (next >= deadline || now() >= deadline) break;
    if (finishing) {
      // finish() waits for these reads: nothing cuts them short.
      std::unique_lock lock(mu_);
      wait_locked(lock, next, [] { return false; });
    } else if (wait_until(stop, next, /*edges=*/false) == wake::finish) {
      break;
    }
    const mono_time round = now();
    for (std::size_t j = 0; j < devs.size(); ++j)
      focus[devs[j].k] = !done[j] && round >= at(devs[j].from_s);
    const auto counters = read_round(round_kind::shape, focus);
    bool all = true;
    for (std::size_t j = 0; j < devs.size(); ++j) {
      const auto& [lost, value] = counters[devs[j].k];
      if (lost != 0) {
        done[j] = true;
      } else if (counter_read_[devs[j].k]) {
        done[j] = done[j] || (devs[j].settle && focus[devs[j].k]) || (seen[j] && value != *seen[j]);
        seen[j] = value;
      }
      all = all && done[j];
    }
    if (all) break;
  }
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
  std::vector<health_reading> h(devices_.size());
  for (std::size_t k = 0; k < devices_.size(); ++k)
    h[k] = backend_->read_health(devices_[k]);
  {
    std::lock_guard lock(mu_);
    if (abandoned_) return;
    for (std::size_t k = 0; k < devices_.size(); ++k)
      last_health_[k] = std::move(h[k]);
    ++health_rounds_;
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
