#pragma once
// Turns reads of a device's energy counter into "anchors": (instant, energy) pairs at which the
// device's cumulative energy is known, so that the energy at any instant between two anchors can
// be interpolated.  Pure logic: no clocks, no NVML; times are CLOCK_MONOTONIC seconds.
//
// Why this is needed: on recent GPUs the counter advances only every ~20-100 ms
// (docs/nvml-notes.md §2.2), so a value read at t is the energy at the last update instant u <= t,
// not at t.  Using t would misplace up to one update period of energy at every boundary.  The track
// learns the update period and phase from dense reads (the sampler reads every ~2 ms for a moment
// at the start and after the end) and places each value at the update instant that produced it:
//   - a value first seen within a narrow bracket of reads (<= narrow_bracket_s()) is placed at
//     the middle of the bracket ("pinned");
//   - otherwise, once the update period is known, at the last predicted update <= its first read;
//   - otherwise, and for counters that advance continuously, at its first read.
//
// Not thread-safe: owned by the sampler thread.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

namespace joules {

struct energy_anchor {
  double t = 0.0;         // instant at which the device's cumulative energy was `energy_j`
  double energy_j = 0.0;  // cumulative energy, resets compensated
  bool pinned = false;    // placed within a narrow bracket
  double lo = 0.0;        // the value was not there yet at lo (-inf: unknown)...
  double hi = 0.0;        // ...and was there at hi (its first read)
};

class counter_track {
 public:
  // Two reads this close bracket an update narrowly enough to pin it; wider where each read of
  // the counter takes longer (set_read_span), up to kWidestBracketS.
  static constexpr double kNarrowBracketS = 0.004;
  static constexpr double kWidestBracketS = 0.008;

  enum class model_kind { unknown, continuous, periodic };

  // A read of the raw counter (mJ) at instant t.  `power_w`, when known, estimates the energy
  // lost across a counter reset.  Returns true when the counter went backwards (a reset).
  bool add(double t, std::uint64_t raw_mj, std::optional<double> power_w);
  // The same for a counter in µJ (RAPL energy_uj, Level Zero).  Energies are kept as integer
  // counts until they are turned once into joules, so the energy at an anchor is exact to the
  // count.
  bool add_uj(double t, std::uint64_t raw_uj, std::optional<double> power_w);
  // The same for a counter in counts of set_unit_uj() µJ each (AMD's energy accumulator).
  bool add_counts(double t, std::uint64_t raw, std::optional<double> power_w) {
    return add_uj(t, raw, power_w);
  }
  // µJ per count for add_counts (AMD's counter_resolution; 1 for µJ counters).  The energy of
  // n counts is n x unit_uj / 1e6 J.  Call before the first add.
  void set_unit_uj(double unit_uj) { unit_uj_ = unit_uj; }

  // The counter counts modulo `modulus` counts, 0 standing for 2^64 (RAPL wraps at its
  // max_energy_range_uj, AMD's and Level Zero's counters are 64-bit): a decrease that
  // `max_power_w` could explain since the previous read is a wrap, counted exactly; a larger
  // one is a reset (write "0" to energy_uj, a driver reload).  Call before the first add.
  void set_wrap(std::uint64_t modulus, double max_power_w);
  // The counter advances at every hardware update (RAPL: ~1 ms): it is continuous from the
  // start, and a value that did not change between reads means no energy was used meanwhile, so
  // the energy is flat up to the last read that still showed it.  Call before the first add.
  void set_continuous();

  // How long a read of the counter usually takes (seconds).  Two reads of a counter that takes
  // 4 ms a read (NVML's on an H100, docs/nvml-notes.md §2.4) are never 4 ms apart: back to back
  // they are one read apart, a few tens of µs more.  The narrow bracket is then one and a half
  // reads, up to kWidestBracketS: an update pinned to within 6 ms is still placed twenty times
  // as closely as one placed anywhere in a 100 ms update period.
  void set_read_span(double usual_s) {
    narrow_bracket_s_ = std::clamp(1.5 * usual_s, kNarrowBracketS, kWidestBracketS);
  }
  double narrow_bracket_s() const { return narrow_bracket_s_; }

  // Learns the update period from a burst of dense reads added since begin_burst().
  void begin_burst();
  void end_burst();

  // Cumulative energy at t, interpolated between placed anchors.  Beyond the first or last
  // anchor it extrapolates at the rate of the two nearest anchors (or `rate_w` when there is only
  // one) if `rate_w` is given, and returns nullopt otherwise (wait for more reads).
  std::optional<double> energy_at(double t, std::optional<double> rate_w) const;

  // The two placed anchors around t (a.t <= t <= b.t), when t lies within the placed ones.
  std::optional<std::pair<energy_anchor, energy_anchor>> bracket(double t) const;

  // True once an anchor at or after t is placed.
  bool covers(double t) const;

  // True unless the energy at t comes from the first value read, placed by a prediction that
  // the model's error could move by a whole update (a predicted update that close to its read)
  // and that pins could still make finer (an error wider than a pin's bracket).  A model learnt
  // from a costly counter's burst a second after that read, carried back ten periods, is such a
  // prediction; the pins that come later move the value (replace_predicted), so a boundary that
  // is not settled is worth waiting for.
  bool settled_at(double t) const;

  // Forgets anchors that are no longer needed to interpolate at or after t.
  void trim_before(double t);

  // The first update the periodic model predicts after t (nullopt for other models).
  std::optional<double> next_update_after(double t) const {
    const auto u = predicted_update_at_or_before(t);
    return u ? std::optional<double>(*u + period_) : std::nullopt;
  }

  // How far the true update may lie from the one the periodic model predicts near t: as far as
  // the reference update instant may be off (half a bracket after one pin, less as pins are
  // weighed together, more where pins scattered beyond their brackets), growing by the period's
  // own uncertainty at every period from there.  The sampler reads densely that far before a
  // predicted update, so that it still pins the update when the phase has drifted (a counter whose
  // reads are costly is not read at every tick, and a period learnt from a short burst of slow
  // reads is coarse).
  // While the model is in doubt (doubted()), the update may be anywhere: half a period.
  double prediction_error_s(double t) const {
    if (model_ != model_kind::periodic || period_ <= 0.0) return 0.0;
    if (doubted_pin_) return 0.5 * period_;
    return std::sqrt(3.0 * phase_var_) + scatter_s_ +
           std::abs(t - last_pinned_) / period_ * period_error_s_;
  }

  // The part of prediction_error_s() that grows with the distance from the reference update: the
  // part that pinning an update resets.
  double drift_error_s(double t) const {
    if (model_ != model_kind::periodic || period_ <= 0.0) return 0.0;
    if (doubted_pin_) return 0.5 * period_;
    return std::abs(t - last_pinned_) / period_ * period_error_s_;
  }

  // True after a pinned update the periodic model could not place (learn_from_pinned): the
  // model or that pin is wrong, and the next pin, read soon, tells which.
  bool doubted() const { return doubted_pin_.has_value(); }

  model_kind model() const { return model_; }
  double period_s() const { return period_; }
  bool has_reads() const { return has_last_; }
  double last_read_t() const { return last_read_t_; }
  double last_energy_j() const { return last_energy_j_; }
  double first_energy_j() const { return first_energy_j_; }
  int resets() const { return resets_; }
  int wraps() const { return wraps_; }
  double reset_estimated_j() const { return reset_estimated_j_; }  // energy estimated across resets
  std::size_t anchor_count() const { return anchors_.size(); }
  const std::deque<energy_anchor>& anchors() const { return anchors_; }

 private:
  struct pending_value {
    double lo;  // last read with the previous value (-inf when none)
    double hi;  // first read with this value
    double energy_j;
  };

  void place_pending();
  // A read that shows the value unchanged: the energy may be known flat up to some instant.
  void hold_flat(double t);
  // Where a value seen first at `hi` (and not yet at `lo`) was produced, given the model.
  double place(double lo, double hi, bool& pinned) const;
  // Re-places anchors that were placed by prediction, after the model improved.
  void replace_predicted();
  std::optional<double> predicted_update_at_or_before(double t) const;
  void push_anchor(energy_anchor a);
  bool learn_from_pinned(double t);
  // After a pin the model could not place (doubted_pin_): restarts the model from that pin and
  // the pin at t, when the two are few enough updates apart to count them surely.
  bool restart_from_doubted(double t);
  // True when placing `a` again could not move it (settled_at).
  bool placed_for_good(const energy_anchor& a) const;

  std::deque<energy_anchor> anchors_;
  std::optional<pending_value> pending_;  // the newest value, not yet placed in time
  std::deque<pending_value> queued_;      // older values waiting for a burst to end
  std::vector<double> burst_changes_;     // pinned change instants seen during a burst
  std::vector<std::pair<double, double>> burst_unpinned_;  // the burst's other changes (lo, hi)
  std::size_t burst_reads_ = 0;
  std::size_t burst_changed_reads_ = 0;
  bool in_burst_ = false;

  double narrow_bracket_s_ = kNarrowBracketS;
  model_kind model_ = model_kind::unknown;
  double period_ = 0.0;
  double period_error_s_ = 0.0;  // how far period_ may be off
  double scatter_s_ = 0.0;       // how far pins were off beyond their brackets (learn_from_pinned)
  double phase_var_ = 0.0;       // variance of last_pinned_ (s²)
  double first_pinned_ = 0.0;    // reference update instant for the periodic model
  double last_pinned_ = 0.0;     // the reference update instant predictions count from
  std::optional<double> doubted_pin_;  // a pin the model could not place (learn_from_pinned)

  // Energy (J) of a raw reading: (raw - base + wrapped) counts, an exact integer, times the
  // unit, plus the offset.  A 64-bit counter's wrap needs no term: raw - base is taken modulo
  // 2^64.
  double energy_of(std::uint64_t raw) const;

  bool has_last_ = false;
  std::uint64_t last_raw_ = 0;  // counts (µJ unless set_unit_uj)
  double last_read_t_ = 0.0;
  double value_seen_t_ = 0.0;  // the first read that showed the current value
  std::uint64_t base_ = 0;     // the raw value that counts as 0 (the first read)
  std::int64_t wrapped_ = 0;   // modulus x wraps (counters that wrap below 2^64)
  bool wraps_at_modulus_ = false;
  std::uint64_t modulus_ = 0;  // 0 with wraps_at_modulus_: 2^64
  double unit_uj_ = 1.0;
  double wrap_max_power_w_ = 0.0;
  bool continuous_ = false;  // set_continuous()
  int wraps_ = 0;
  double offset_j_ = 0.0;  // added to raw energy; grows at every reset
  double last_energy_j_ = 0.0;
  double first_energy_j_ = 0.0;
  int resets_ = 0;
  double reset_estimated_j_ = 0.0;
};

}  // namespace joules
