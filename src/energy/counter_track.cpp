#include "energy/counter_track.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace joules {
namespace {

constexpr double kNoTime = -std::numeric_limits<double>::infinity();

// Share of dense reads that must see a new value for the counter to count as continuous.
constexpr double kContinuousShare = 0.8;
// Fewer dense reads than this say nothing about how the counter advances (a run that ended
// during the start burst); every one of them showing a new value still means "continuous".
constexpr std::size_t kMinBurstReads = 3;

// The most updates a gap between two pinned updates of a burst may be taken to hide, each
// leaving the value unchanged (end_burst).
constexpr double kMostHiddenUpdates = 3.0;

// A pinned update more than this share of a period away from the model's prediction means the
// model or the pin is wrong; the model is then not bent to it (restart_from_doubted()).
constexpr double kPeriodTolerance = 0.3;

// Two pins at most this many updates apart are counted surely by a period that may be off by
// up to a tenth (a period learnt from a few slow reads): restart_from_doubted().
constexpr double kMostRecountedUpdates = 3.0;

}  // namespace

bool counter_track::add(double t, std::uint64_t raw_mj, std::optional<double> power_w) {
  return add_uj(t, raw_mj * 1000U, power_w);
}

void counter_track::set_wrap(std::uint64_t modulus, double max_power_w) {
  wraps_at_modulus_ = true;
  modulus_ = modulus;
  wrap_max_power_w_ = max_power_w;
}

void counter_track::set_continuous() {
  continuous_ = true;
  model_ = model_kind::continuous;
}

double counter_track::energy_of(std::uint64_t raw) const {
  const auto counts = static_cast<std::int64_t>(raw - base_) + wrapped_;
  // x 1.0 is exact: a µJ counter's energy is the same division by 1e6 as ever.
  return static_cast<double>(counts) * unit_uj_ / 1e6 + offset_j_;
}

bool counter_track::add_uj(double t, std::uint64_t raw_uj, std::optional<double> power_w) {
  bool reset = false;
  double energy = 0.0;
  double lo = kNoTime;
  if (!has_last_) {
    base_ = raw_uj;
    energy = 0.0;
    has_last_ = true;
  } else if (raw_uj < last_raw_) {
    // A wrap adds (modulus - last + raw) since the last read; more than the highest plausible
    // power could use in that time means the counter was reset instead.  The slack covers the
    // read instants being the middles of the reads, not the counter's update instants.
    std::uint64_t turn = 0;
    if (wraps_at_modulus_ && modulus_ == 0) {
      turn = raw_uj - last_raw_;  // modulo 2^64: 2^64 - last + raw
    } else if (wraps_at_modulus_ && modulus_ > last_raw_) {
      turn = modulus_ - last_raw_ + raw_uj;
    }
    const double allowed =
        wrap_max_power_w_ * (std::max(0.0, t - last_read_t_) + 0.002) * 1e6 / unit_uj_;
    if (turn > 0 && static_cast<double>(turn) <= allowed) {
      if (modulus_ != 0) wrapped_ += static_cast<std::int64_t>(modulus_);
      ++wraps_;
      energy = energy_of(raw_uj);
      lo = last_read_t_;
    } else {
      // The counter went backwards: the driver was reloaded or the GPU reset, and the counter
      // restarted from 0 at some instant since the last read.  The energy between the last read
      // and that instant is unknown: estimate the whole gap from power when we have it.
      const double since_reset = static_cast<double>(raw_uj) * unit_uj_ / 1e6;
      double gap = since_reset;
      if (power_w && t > last_read_t_) gap = std::max(gap, *power_w * (t - last_read_t_));
      energy = last_energy_j_ + gap;
      base_ = 0;
      wrapped_ = 0;
      offset_j_ = energy - since_reset;
      reset_estimated_j_ += gap - since_reset;
      ++resets_;
      reset = true;
      lo = last_read_t_;
    }
  } else {
    energy = energy_of(raw_uj);
    lo = last_read_t_;
  }

  const bool changed = !pending_ && anchors_.empty() ? true : raw_uj != last_raw_ || reset;
  if (in_burst_) {
    ++burst_reads_;
    if (changed && lo != kNoTime) {
      ++burst_changed_reads_;
      if (t - lo <= narrow_bracket_s_) {
        burst_changes_.push_back(0.5 * (lo + t));
      } else {
        burst_unpinned_.emplace_back(lo, t);
      }
    }
  }
  if (changed) {
    // The previous pending value can no longer change its bracket; place it first.
    if (pending_ && !in_burst_) place_pending();
    if (pending_) {
      // Still waiting for the burst to end: keep the older value as an anchor-to-be.
      queued_.push_back(*pending_);
    }
    // A continuous counter held its previous value up to the last read that showed it.
    if (model_ == model_kind::continuous && lo != kNoTime && !anchors_.empty() &&
        lo > anchors_.back().t) {
      push_anchor(energy_anchor{lo, last_energy_j_, true, lo, lo});
    }
    pending_ = pending_value{lo, t, energy};
    value_seen_t_ = t;
    if (!in_burst_) place_pending();
  }
  if (!changed) hold_flat(t);
  last_raw_ = raw_uj;
  last_read_t_ = t;
  last_energy_j_ = energy;
  return reset;
}

void counter_track::hold_flat(double t) {
  // A stepped counter whose value has not changed for longer than an update period went
  // through an update that left it unchanged: (to its millijoule) no energy was used between
  // the update that set the value and that one, as on an idle or power-gated GPU.  Without this
  // anchor the energy past the last change would be extrapolated at the rate of the last changes,
  // as if the GPU were still busy.  Only the period is trusted, not the predicted phase, which
  // drifts between bursts: the unchanged update lies within a period of t, so the energy is known
  // flat up to a period (and a tolerance) before t.
  if (in_burst_ || pending_ || anchors_.empty() || model_ != model_kind::periodic) return;
  const double flat_until = t - (1.0 + kPeriodTolerance) * period_;
  if (flat_until <= value_seen_t_ || flat_until <= anchors_.back().t) return;
  push_anchor(energy_anchor{flat_until, last_energy_j_, true, flat_until, flat_until});
}

void counter_track::begin_burst() {
  if (continuous_) return;  // nothing to learn
  in_burst_ = true;
  burst_reads_ = 0;
  burst_changed_reads_ = 0;
  burst_changes_.clear();
  burst_unpinned_.clear();
}

void counter_track::end_burst() {
  if (continuous_) return;
  in_burst_ = false;
  if (model_ == model_kind::unknown && burst_reads_ >= kMinBurstReads &&
      static_cast<double>(burst_changed_reads_) >=
          kContinuousShare * static_cast<double>(burst_reads_)) {
    model_ = model_kind::continuous;
  } else if (burst_changes_.size() >= 2 && model_ != model_kind::continuous) {
    // Pinned updates are whole periods apart.  An update the burst could not pin (a round of
    // reads that came late on a busy machine) still showed as a change between them: each gap
    // spans one period more per such change.  An update that left the value unchanged (an idle
    // GPU) shows as nothing: the period is then the shortest gap per period, and every gap a
    // whole number of those.  (The median of gaps of 0.1 and 0.2 s, 0.15 s, would be a period
    // the counter never had.)
    std::vector<double> diffs;
    std::vector<double> steps;  // updates per gap, from the changes seen
    for (std::size_t i = 1; i < burst_changes_.size(); ++i) {
      const double a = burst_changes_[i - 1];
      const double b = burst_changes_[i];
      diffs.push_back(b - a);
      const auto between =
          std::count_if(burst_unpinned_.begin(), burst_unpinned_.end(),
                        [&](const auto& c) { return c.second > a && c.second < b; });
      steps.push_back(1.0 + static_cast<double>(between));
    }
    double shortest = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < diffs.size(); ++i)
      shortest = std::min(shortest, diffs[i] / steps[i]);
    double periods = 0.0;
    double spanned = 0.0;
    bool consistent = shortest > 0.0 && std::isfinite(shortest);
    for (std::size_t i = 0; consistent && i < diffs.size(); ++i) {
      const double k = steps[i] * std::round(diffs[i] / steps[i] / shortest);
      if (k < 1.0 ||
          std::abs(diffs[i] - k * shortest) > kPeriodTolerance * shortest + 2 * narrow_bracket_s_)
        consistent = false;
      periods += k;
      spanned += diffs[i];
    }
    double q = consistent ? spanned / periods : 0.0;
    // A change seen late (unpinned) before the first pinned update or after the last must still
    // have an update of the model between the read before it and its own.  One that has none
    // shows that the pinned updates were several periods apart, each gap hiding updates that
    // left the value unchanged (a burst that read sparsely there, or an idle GPU): the period
    // is then the largest whole share of q that puts an update in every such bracket.
    const double first = burst_changes_.front();
    const double last = burst_changes_.back();
    const auto on_grid = [&](double period) {
      return std::all_of(burst_unpinned_.begin(), burst_unpinned_.end(), [&](const auto& c) {
        const auto [lo, hi] = c;
        if (hi > first && hi < last) return true;  // between pinned ones: counted above
        // The first update of the grid after the read before the change (and not a pinned one:
        // half a period past the last, or before the first), within a bracket either side.
        const double from = hi >= last ? std::max(lo, last + 0.5 * period) : lo;
        const double until = hi >= last ? hi : std::min(hi, first - 0.5 * period);
        const double k = std::ceil((from - narrow_bracket_s_ - first) / period);
        return first + k * period <= until + narrow_bracket_s_;
      });
    };
    if (consistent && !on_grid(q)) {
      consistent = false;
      for (double share = 2.0; share <= kMostHiddenUpdates + 1.0 && !consistent; ++share) {
        if (on_grid(q / share)) {
          q /= share;
          periods *= share;
          consistent = true;
        }
      }
    }
    if (model_ == model_kind::unknown && consistent && q > 2 * narrow_bracket_s_) {
      model_ = model_kind::periodic;
      period_ = q;
      first_pinned_ = burst_changes_.front();
      last_pinned_ = burst_changes_.back();
      // Each pinned instant is known to within half a bracket: over `periods` periods, the
      // period to within a bracket divided by them.
      period_error_s_ = narrow_bracket_s_ / std::max(1.0, periods);
      phase_var_ = narrow_bracket_s_ * narrow_bracket_s_ / 12.0;  // uniform over a bracket
    }
  }
  if (model_ == model_kind::periodic) {
    for (double c : burst_changes_)
      learn_from_pinned(c);
    replace_predicted();
  }
  // Place everything that waited for the model, oldest first.
  std::deque<pending_value> queued;
  queued.swap(queued_);
  const auto newest = pending_;
  for (const auto& pv : queued) {
    pending_ = pv;
    place_pending();
  }
  pending_ = newest;
  if (pending_) place_pending();
}

bool counter_track::learn_from_pinned(double t) {
  if (model_ != model_kind::periodic || t <= first_pinned_) return false;
  if (restart_from_doubted(t)) return true;
  const double k = std::round((t - first_pinned_) / period_);
  if (k < 1.0) return false;
  const double residual = (t - first_pinned_) - k * period_;
  // The prediction k periods on may be off by k times the period's own error: a residual within
  // that still tells which update this was, as long as it is well under half a period.
  const double expected = std::min(0.5 * narrow_bracket_s_ + k * period_error_s_, 0.45 * period_);
  if (std::abs(residual) > std::max(kPeriodTolerance * period_, expected)) {
    doubted_pin_ = t;  // the model is not bent to it: restart_from_doubted()
    return false;
  }
  doubted_pin_.reset();
  // Pins scatter more than their brackets say where reads wait on the driver (another process
  // reading the counter): what the prediction from the reference missed by, beyond what it
  // claimed, widens every later prediction (fading as pins agree again).
  const double m = std::round((t - last_pinned_) / period_);
  if (m >= 1.0) {
    const double missed = std::abs((t - last_pinned_) - m * period_);
    scatter_s_ = std::max(0.9 * scatter_s_, scatter_s_ + (missed - prediction_error_s(t)));
  }
  // The longer the baseline, the finer the period: errors of the two ends are divided by k.
  period_ = (t - first_pinned_) / k;
  period_error_s_ = std::min(period_error_s_, narrow_bracket_s_ / k);
  if (m < 1.0) {
    last_pinned_ = std::max(last_pinned_, t);
    return true;
  }
  // The phase: each pin lies anywhere in its bracket, so the reference update instant weighs the
  // newest pin against what the earlier ones predict for it, by how far each may be off (a
  // Kalman filter of one variable).  Where reads take 4 ms, ten pins place the updates about
  // three times as closely as the newest alone.
  const double half = 0.5 * narrow_bracket_s_;
  const double pin_var = half * half / 3.0 + scatter_s_ * scatter_s_;
  const double drift = m * period_error_s_;
  const double predicted_var = phase_var_ + drift * drift / 3.0;
  const double gain = predicted_var / (predicted_var + pin_var);
  const double predicted = last_pinned_ + m * period_;
  last_pinned_ = predicted + gain * (t - predicted);
  phase_var_ = (1.0 - gain) * predicted_var;
  return true;
}

bool counter_track::restart_from_doubted(double t) {
  // The model was learnt from a short burst: where its reads scattered (a busy machine, reads
  // that take 4 ms), its period may be off by several percent, and ten periods on it predicts a
  // whole update wrong; each later pin is then either too far off to bend it, or bends it to a
  // count of updates one off (31 where there were 30), and the model stays wrong for the rest of
  // the run.  A pin that far off raises doubt instead; the sampler pins the next update at once
  // (repin()).  A pin is within a few milliseconds of its update (its bracket), so two pins close
  // enough to count the updates between them with the period as it is are surer than any count
  // carried over many periods: the model restarts from them, even where the new pin would also
  // pass for one of the old model's.
  if (!doubted_pin_ || t <= *doubted_pin_) return false;
  const double gap = t - *doubted_pin_;
  const double k = std::round(gap / period_);
  if (k < 1.0 || k > kMostRecountedUpdates ||
      std::abs(gap - k * period_) > kPeriodTolerance * period_)
    return false;
  period_ = gap / k;
  period_error_s_ = narrow_bracket_s_ / k;
  first_pinned_ = *doubted_pin_;
  last_pinned_ = t;
  phase_var_ = narrow_bracket_s_ * narrow_bracket_s_ / 12.0;
  scatter_s_ = 0.0;
  doubted_pin_.reset();
  return true;
}

std::optional<double> counter_track::predicted_update_at_or_before(double t) const {
  if (model_ != model_kind::periodic || period_ <= 0.0) return std::nullopt;
  // Predict from the newest pinned update: the period error grows with the distance from it.
  const double ref = last_pinned_;
  return ref + std::floor((t - ref) / period_) * period_;
}

double counter_track::place(double lo, double hi, bool& pinned) const {
  pinned = false;
  if (model_ == model_kind::continuous) return hi;
  if (lo != kNoTime && hi - lo <= narrow_bracket_s_) {
    pinned = true;
    return 0.5 * (lo + hi);
  }
  if (auto u = predicted_update_at_or_before(hi); u && (lo == kNoTime || *u > lo)) return *u;
  return hi;
}

void counter_track::place_pending() {
  if (!pending_) return;
  const pending_value pv = *pending_;
  pending_.reset();
  energy_anchor a;
  a.energy_j = pv.energy_j;
  a.lo = pv.lo;
  a.hi = pv.hi;
  a.t = place(pv.lo, pv.hi, a.pinned);
  if (a.pinned && !in_burst_ && learn_from_pinned(a.t)) replace_predicted();
  push_anchor(a);
}

void counter_track::replace_predicted() {
  double previous = kNoTime;
  for (auto& a : anchors_) {
    if (!a.pinned) a.t = place(a.lo, a.hi, a.pinned);
    if (a.t <= previous) a.t = previous + 1e-9;
    previous = a.t;
  }
}

void counter_track::push_anchor(energy_anchor a) {
  if (!anchors_.empty()) {
    const energy_anchor& last = anchors_.back();
    if (a.energy_j < last.energy_j) a.energy_j = last.energy_j;
    if (a.t <= last.t) a.t = last.t + 1e-9;
  } else {
    first_energy_j_ = a.energy_j;
  }
  anchors_.push_back(a);
}

std::optional<std::pair<energy_anchor, energy_anchor>> counter_track::bracket(double t) const {
  if (anchors_.size() < 2 || t < anchors_.front().t || t > anchors_.back().t) return std::nullopt;
  auto it = std::upper_bound(anchors_.begin(), anchors_.end(), t,
                             [](double x, const energy_anchor& a) { return x < a.t; });
  if (it == anchors_.end()) --it;  // t is the last anchor itself
  return std::make_pair(*(it - 1), *it);
}

std::optional<double> counter_track::energy_at(double t, std::optional<double> rate_w) const {
  if (anchors_.empty()) return std::nullopt;
  const auto& first = anchors_.front();
  const auto& last = anchors_.back();
  auto slope = [&](const energy_anchor& a, const energy_anchor& b) {
    return b.t > a.t ? (b.energy_j - a.energy_j) / (b.t - a.t) : 0.0;
  };
  if (t < first.t) {
    // No earlier reading will ever arrive: extrapolating backwards cannot wait for better data.
    if (anchors_.size() >= 2) return first.energy_j - slope(first, anchors_[1]) * (first.t - t);
    if (!rate_w) return std::nullopt;
    return first.energy_j - *rate_w * (first.t - t);
  }
  // A continuous counter's energy is known, flat, up to the last read that showed its value.
  if (model_ == model_kind::continuous && t > last.t && t <= last_read_t_) return last_energy_j_;
  if (model_ == model_kind::continuous && t > last.t) {
    if (!rate_w) return std::nullopt;
    // Beyond the last read: the run's average rate, not the last step's (a jump of the
    // counter between two reads is not a rate).
    const double span = last_read_t_ - first.t;
    const double r = span > 0 ? (last_energy_j_ - first.energy_j) / span : *rate_w;
    return last_energy_j_ + r * (t - last_read_t_);
  }
  if (t > last.t) {
    if (!rate_w) return std::nullopt;
    const double r = anchors_.size() >= 2 ? slope(anchors_[anchors_.size() - 2], last) : *rate_w;
    return last.energy_j + r * (t - last.t);
  }
  if (t == last.t) return last.energy_j;
  const auto b = bracket(t);
  return b->first.energy_j + slope(b->first, b->second) * (t - b->first.t);
}

bool counter_track::covers(double t) const {
  if (model_ == model_kind::continuous && has_last_ && !anchors_.empty() && last_read_t_ >= t)
    return true;
  return !anchors_.empty() && anchors_.back().t >= t;
}

bool counter_track::placed_for_good(const energy_anchor& a) const {
  // A value with a read before it is placed between neighbours a period apart, which keep it
  // from moving by a whole update; the first value read has none.
  if (a.pinned || a.lo != kNoTime || model_ != model_kind::periodic || period_ <= 0.0) return true;
  // place() takes the last predicted update at or before its read: the choice is sure when the
  // updates predicted either side lie farther than the prediction's error from the read.  A
  // prediction as fine there as a pin is counts as sure: later pins would not place it better.
  const double error = prediction_error_s(a.hi);
  if (error <= narrow_bracket_s_) return true;
  const double before = *predicted_update_at_or_before(a.hi);
  return std::min(a.hi - before, before + period_ - a.hi) > error;
}

bool counter_track::settled_at(double t) const {
  if (anchors_.empty()) return true;
  auto it = std::upper_bound(anchors_.begin(), anchors_.end(), t,
                             [](double x, const energy_anchor& a) { return x < a.t; });
  // The anchor at or before t and the one after it; before the first anchor, the first two
  // (energy_at extrapolates from them).
  if (it == anchors_.begin()) ++it;
  if (!placed_for_good(*(it - 1))) return false;
  return it == anchors_.end() || placed_for_good(*it);
}

void counter_track::trim_before(double t) {
  while (anchors_.size() >= 3 && anchors_[1].t <= t)
    anchors_.pop_front();
}

}  // namespace joules
