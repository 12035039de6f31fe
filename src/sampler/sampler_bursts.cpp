#include <algorithm>
#include <cmath>
#include <limits>

#include "sampler/sampler.hpp"

// The sampler's dense reads: the start burst that learns how each counter advances, the reads
// around a boundary that place it, and the pins that keep a costly counter's update instants
// known.  sampler.cpp holds the schedule and the rounds of reads.
namespace joules {
namespace {

// A counter has shown enough of itself during the start burst: new values at nearly every read
// (it advances continuously) or several separate updates (it advances in steps).  A counter
// whose reads take over kSlowReadS stops at three updates, two periods: on an H100 the burst's
// 4 ms reads are most of what a run's start costs, and repin() lengthens the baseline from there
// at a few reads a pin.  One read in a millisecond or two (a cheaper counter on a loaded machine)
// keeps the fourth: its period is then known well enough for the boundaries placed before the
// first pins.
constexpr double kSlowReadS = 0.002;

bool counter_characterised(std::size_t reads, std::size_t changes, bool slow) {
  const bool continuous = reads >= 10 && changes + 2 >= reads;
  const bool stepped = changes >= (slow ? 3U : 4U) && changes + 2 < reads;
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

// repin() leaves kCostlyCounterEvery between two pins of a counter only while the prediction's
// drift over that time stays under this share of a period: a pin further off could be counted
// one update wrong (counter_track::learn_from_pinned), and the model would follow that count.
constexpr double kCoastShare = 0.25;

}  // namespace

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

bool sampler::sparse_counter(std::size_t k) const {
  // Only a counter whose updates are far apart for its reads can be read once per update and
  // placed by the model: one updated every 10 ms that takes 2 ms to read (a loaded machine) is
  // read at every tick, as any other, and the energy between two readings stays a tick's.
  const counter_track& c = accounting_->timeline(k).counter();
  return costly_counter(k) && c.model() == counter_track::model_kind::periodic &&
         c.period_s() >= kSparsePeriodReads * read_spans_[k].usual();
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
  std::vector<std::size_t> alone;  // read densely one at a time, after the others together
  {
    std::lock_guard lock(mu_);
    if (costly >= 2 && round_s(std::nullopt) > bracket) {
      for (std::size_t k = 0; k < devices_.size(); ++k) {
        const device_timeline& tl = accounting_->timeline(k);
        if (which[k] && costly_counter(k) && !tl.lost() &&
            round_s(k) <= tl.counter().narrow_bracket_s())
          alone.push_back(k);
      }
    }
  }
  if (alone.size() < 2) alone.clear();
  std::vector<bool> rest = which;
  for (std::size_t k : alone)
    rest[k] = false;
  bool reading = true;
  if (std::find(rest.begin(), rest.end(), true) != rest.end())
    reading = burst(stop, rest, alone.empty() ? std::vector<bool>{} : rest, reading);
  for (std::size_t k : alone) {
    // The counters learnt so far are pinned again as they need (repin()) between the bursts:
    // eight bursts take a second and a half, too long to count their updates across.
    if (k != alone.front()) repin(stop);
    std::vector<bool> only(devices_.size(), false);
    only[k] = true;
    reading = burst(stop, only, only, reading);
  }
  // A boundary asked for during the bursts was read there (burst()); one asked for after their
  // last wait is left to the ticks' loop.
}

bool sampler::burst(std::stop_token& stop, const std::vector<bool>& which,
                    const std::vector<bool>& focus, bool reading) {
  const std::size_t n = devices_.size();
  std::vector<std::size_t> reads(n, 0);
  std::vector<std::size_t> changes(n, 0);
  std::vector<double> previous(n, 0.0);
  std::vector<bool> counts(n, false);
  std::vector<bool> stepped(n, false);  // a counter that advances in steps, still there
  {
    std::lock_guard lock(mu_);
    for (std::size_t k = 0; k < n; ++k) {
      const device_timeline& tl = accounting_->timeline(k);
      const device_info& info = backend_->devices()[devices_[k]];
      // A continuous counter (RAPL) has nothing to show: it advances at every read.
      stepped[k] = info.has_energy_counter && !info.counter_continuous && !tl.lost();
      counts[k] = which[k] && stepped[k];
      previous[k] = tl.counter().last_energy_j();
    }
  }
  // A counter that showed two updates in a row, each pinned (first seen within a narrow bracket
  // of its read before), predicts the next one a gap later: until shortly before it, reading it
  // densely would only read the same value again.  So it rests until then (quiet_until), and each
  // device not read densely is read with the others at least every interval, as a tick would.
  // An update that comes during the rest is seen late, unpinned, and the dense reads go on until
  // two pinned ones in a row again.  At 100 ms updates this halves the rounds of a start burst
  // that waits for four updates.  A burst of one costly counter (`focus`) reads every device at
  // each of its rounds, as before: its rounds (that counter and the others' power) set how
  // densely the counter is read, and skipping the others would only read it more often.  Its
  // rounds rest as a whole; one whose reads take over 2 ms stops at its third update, first.
  const bool rests = focus.empty();
  std::vector<std::optional<mono_time>> read_at(n);     // the device's last read in this burst
  std::vector<std::optional<mono_time>> changed_at(n);  // its last update, pinned
  std::vector<mono_time> quiet_until(n, mono_time::min());
  // After a boundary, a counter is read densely until it advances, as edge_burst() does: the
  // update after the boundary is pinned.  `edge_value` is its value at the boundary's read.
  std::vector<std::optional<double>> edge_value(n);
  // Two reads this close pin the update between them (counter_track::narrow_bracket_s()).
  const auto narrow = [&](std::size_t k) {
    return std::chrono::duration_cast<mono_time::duration>(
        std::chrono::duration<double>(accounting_->timeline(k).counter().narrow_bracket_s()));
  };
  // How long before the predicted update the dense reads start again: two brackets (the two
  // pins' own errors) and a twentieth of the gap (a period learnt from one gap is coarse).
  const auto rest_until = [&](std::size_t k, mono_time at, mono_time before) {
    const auto gap = at - before;
    return at + gap - 2 * narrow(k) - gap / 20;
  };
  const auto dense = [&](std::size_t k, mono_time t) {
    return (counts[k] && quiet_until[k] <= t) || edge_value[k].has_value();
  };
  const auto due = [&](std::size_t k, mono_time t) {
    return !read_at[k] || t - *read_at[k] >= options_.interval;
  };
  const mono_time deadline = now() + options_.start_burst_max;
  mono_time next = now();
  std::vector<bool> moved(n, false);
  // The closest two reads of a device came: the time between the starts of two rounds.
  std::optional<mono_time> last_round;
  auto closest = mono_time::duration::max();
  const auto any = [](const auto& v) {
    return std::any_of(v.begin(), v.end(), [](const auto& x) { return static_cast<bool>(x); });
  };
  while (reading && (any(counts) || any(edge_value))) {
    next += options_.burst_spacing;
    // Past the rests: the first instant a device is read densely again, or is due.
    mono_time first = mono_time::max();
    for (std::size_t k = 0; k < n; ++k) {
      first = std::min(first, read_at[k] ? *read_at[k] + options_.interval : next);
      if (counts[k] || edge_value[k])
        first = std::min(first, edge_value[k] ? next : quiet_until[k]);
    }
    // On the burst's grid, so that the reads are the ones a burst without rests would make.
    if (first > next)
      next += (first - next + options_.burst_spacing - mono_time::duration(1)) /
              options_.burst_spacing * options_.burst_spacing;
    // The limit is time, not rounds: with reads slower than the spacing, `next` lags behind.
    if (next >= deadline || now() >= deadline) break;
    const wake w = wait_until(stop, next, /*edges=*/true);
    if (w == wake::finish) {
      reading = false;
      break;
    }
    const mono_time round = now();
    if (w == wake::edge) next = std::min(next, round);  // woken in a rest: dense from here
    if (last_round) closest = std::min(closest, round - *last_round);
    last_round = round;
    std::vector<bool> skip(n, false);
    bool all = w == wake::edge;
    for (std::size_t k = 0; k < n && !all; ++k)
      all = due(k, round);
    if (!all && rests)
      for (std::size_t k = 0; k < n; ++k)
        skip[k] = !dense(k, round);
    const auto counters =
        read_round(focus.empty() ? round_kind::all : round_kind::shape, focus, skip);
    for (std::size_t k = 0; k < n; ++k) {
      if (skip[k]) continue;
      const std::optional<mono_time> before = read_at[k];
      read_at[k] = round;
      if (counters[k].first != 0) {  // lost
        counts[k] = false;
        edge_value[k].reset();
        continue;
      }
      const double value = counters[k].second;
      if (edge_value[k] && value != *edge_value[k]) edge_value[k].reset();
      if (w == wake::edge && stepped[k] && (focus.empty() || focus[k] || !costly_counter(k)))
        edge_value[k] = value;
      if (!counts[k]) continue;
      ++reads[k];
      if (value != previous[k]) {
        ++changes[k];
        moved[k] = true;
        std::optional<mono_time> at;  // the update, pinned
        if (before && round - *before <= narrow(k)) at = *before + (round - *before) / 2;
        quiet_until[k] =
            at && changed_at[k] ? rest_until(k, *at, *changed_at[k]) : mono_time::min();
        changed_at[k] = at;
      }
      previous[k] = value;
      const bool slow = costly_counter(k) && read_spans_[k].usual() > kSlowReadS;
      if (counter_characterised(reads[k], changes[k], slow)) counts[k] = false;
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
      // A model that could not count the updates to a pin kCostlyCounterEvery away (a period
      // from the start burst's two, a model in doubt: counter_track::doubted) is pinned at once.
      const double wait = std::chrono::duration<double>(kCostlyCounterEvery).count();
      const bool coasts = c.drift_error_s(t + wait) <= kCoastShare * c.period_s();
      if (tl.lost() || c.model() != counter_track::model_kind::periodic || !sparse_counter(k) ||
          (now() - repinned_at_[k] < kCostlyCounterEvery && coasts))
        continue;
      // A counter whose ticks all fall close to its updates (the ticks and the updates both
      // every 100 ms) is never read at a tick: pinning an update reads it instead.
      const bool unread = now() - counter_read_at_[k] >= 2 * kCostlyCounterTickEvery;
      const double error = unread ? c.period_s() : c.drift_error_s(t + c.period_s());
      if ((unread || !coasts || error > 0.5 * c.narrow_bracket_s()) && error > worst) {
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
      if (sparse_counter(k)) {
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
  // A repin has no boundary whose energy the reads before the update would shape: until its
  // dense reads it reads at the ticks' pace.  (At shape_spacing, 8 H100s made 480 power
  // readings a second, most of them in repins.)
  const auto spacing =
      only ? std::chrono::duration_cast<std::chrono::microseconds>(options_.interval)
           : options_.shape_spacing;
  mono_time next = start;
  while (true) {
    if (next >= dense_at) {
      next += options_.burst_spacing;
    } else {
      next = std::min(next + spacing, dense_at);
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

}  // namespace joules
