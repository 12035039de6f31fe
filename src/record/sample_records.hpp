#pragma once
// `sample` records (docs/jsonl-schema.md): the devices' power, energy, utilisation, temperature,
// clocks and clock events over consecutive buckets of time, each bucket summarising the readings
// taken in it (min, mean and max), so that a report can draw power over time without a record
// per reading.
//
// Decimation: buckets start `base` wide and double in width each time the run's elapsed time
// reaches kBucketsPerWidth widths (1000 of `base`, then 500 more of 2x`base`, 500 of 4x`base`,
// ...).  Every bucket is then at most 2/kBucketsPerWidth of the elapsed run wide, so a plot of
// the whole run, at any moment, has at least kBucketsPerWidth/2 points across it, and a run of
// duration T writes about kBucketsPerWidth * (1 + log2(T / (kBucketsPerWidth * base)) / 2)
// records: at 100 ms, 1000 records in the first 100 s and 5845 in 24 hours.  Bucket edges
// are multiples of their width after the run's start.
//
// A bucket's energy is the difference of the devices' energy at the last reading in it and the
// last reading before it, and its mean power that energy over the time between those readings:
// the buckets' energies add up to the energy the readings show from the first to the last.  A
// device's energy counts from the sampler's first reading, taken just before the start; while
// the sampler still learns how a counter advances (its first ~0.3 s) the energy is not yet known,
// and the first bucket that knows it holds the energy since that first reading.  The
// exact energies of a run are those of step, phase and session_end records (counter-placed
// edges); samples are for seeing how power went.
//
// Not thread-safe: one owner.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backends/health.hpp"
#include "record/session_records.hpp"

namespace joules {

// One device's reading at one instant, as the sampler's snapshots give it.
struct sample_reading {
  std::optional<double> power_w;
  std::optional<double> energy_j;  // since the sampler's first reading
  bool lost = false;
  const health_reading* health = nullptr;  // the latest health reading, when there is one
};

class sample_buckets {
 public:
  static constexpr std::uint64_t kBucketsPerWidth = 1000;

  // `ctx` must outlive this object (its run id, host, labels and devices go in every record).
  sample_buckets(const run_context& ctx, std::chrono::milliseconds base);

  // Readings at `t_s` (CLOCK_MONOTONIC seconds), one per device of ctx, in time order.  Returns
  // the records of the buckets that ended at or before `t_s`.  Readings before the run's start
  // (ctx.start_mono) only set the energy the first bucket counts from.  With `end_s`, a reading
  // after the run's end (the sampler's last, taken after it) goes into the bucket of the end.
  std::vector<std::string> add(double t_s, const std::vector<sample_reading>& readings,
                               std::optional<double> end_s = std::nullopt);

  // The run ended at `end_s`: returns the record of the bucket under way (cut at the end).
  std::vector<std::string> finish(double end_s);

  // The width of the bucket that starts `offset_s` after the start, for a given base (seconds).
  static double width_at(double offset_s, double base_s);

  std::uint64_t written() const { return written_; }

 private:
  struct stat {
    double min = 0.0;
    double max = 0.0;
    double sum = 0.0;
    std::uint64_t n = 0;
    void add(double v);
  };
  struct device_acc {
    stat power_w;
    stat gpu_util;
    stat memory_util;
    stat temperature_c;
    stat sm_clock_hz;
    stat memory_clock_hz;
    std::vector<std::string> clock_events;
    bool lost = false;
    std::optional<double> energy_start;  // at the last reading before the bucket
    std::optional<double> energy_end;    // at the last reading in it
    std::optional<double> t_start;       // when those were read
    std::optional<double> t_end;
  };

  std::string close_bucket(double end_s);
  void reset_bucket();

  const run_context& ctx_;
  double base_s_;
  double start_s_ = 0.0;   // the run's start
  double bucket_s_ = 0.0;  // the bucket's start, as an offset from the run's start
  double end_s_ = 0.0;     // and its end
  std::uint64_t index_ = 0;
  std::uint64_t readings_ = 0;
  std::vector<device_acc> devices_;
  std::vector<bool> energy_seen_;  // a device's energy was known at some reading
  std::uint64_t written_ = 0;
};

}  // namespace joules
