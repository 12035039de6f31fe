#pragma once
// The last minutes of one reading of a device (its power in W, its utilisation in %), in bounded
// memory, and the glyphs `monitor` draws them with: a bar (eighths of a cell), a sparkline and a
// braille graph.  Pure logic, owned by the monitor's main thread.

#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace joules::monitor {

// How far back monitor keeps readings: the focused view and the graphs show all of it, the
// overview's sparklines the last kSparkSpanS.
inline constexpr double kHistorySpanS = 300.0;
inline constexpr double kSparkSpanS = 60.0;

class history {
 public:
  // At most this many entries are kept, whatever the interval: readings closer together than
  // span / kMaxEntries are averaged into one entry (at --interval 10, ten readings to an entry
  // of 100 ms over 300 s), so that eight GPUs' two histories stay within 1.5 MB.
  static constexpr std::size_t kMaxEntries = 3000;

  // `hold_s`: how long a reading stands for the value after it when no other reading comes
  // (the monitor passes a little more than its interval).
  explicit history(double span_s = kSparkSpanS, double hold_s = 1.5)
      : span_s_(span_s), hold_s_(hold_s), merge_s_(span_s / static_cast<double>(kMaxEntries)) {}

  // A reading at monotonic instant t (s); readings older than the span are dropped.  Instants
  // must not decrease; an unknown value leaves a gap.
  void add(double t, std::optional<double> value);

  // The `span_s` ending at `now` (the whole span by default), cut into `columns` equal
  // buckets, oldest first: the mean of the readings in each.  A bucket narrower than the time
  // between readings (a wide sparkline, a long interval) holds none: it takes the reading
  // before it, as long as that is at most hold_s old and no unknown value came after it.
  // nullopt before the first reading, for unknown values, and where readings stopped (a hung
  // driver).
  std::vector<std::optional<double>> buckets(double now, std::size_t columns) const {
    return buckets(now, columns, span_s_);
  }
  std::vector<std::optional<double>> buckets(double now, std::size_t columns, double span_s) const;

  // The highest reading within the span, or within the `span_s` ending at `now`.
  std::optional<double> peak() const;
  std::optional<double> peak(double now, double span_s) const;
  bool empty() const;  // no known reading within the span
  double span_s() const { return span_s_; }
  std::size_t entries() const { return entries_.size(); }

 private:
  struct entry {
    double t;    // the first reading's instant
    double sum;  // of the readings averaged into it
    double max;  // the highest of them
    unsigned n;  // how many; 0: the value is unknown from t on
  };
  static_assert(sizeof(entry) == 32);  // docs/monitor-doctor.md counts on it

  double span_s_;
  double hold_s_;
  double merge_s_;
  std::deque<entry> entries_;
};

// `columns` cells of ▁▂▃▄▅▆▇█ scaled to `full_scale` (values at or above it are █, 0 is ▁), a
// space for an unknown value.
std::string sparkline(const std::vector<std::optional<double>>& values, double full_scale);

// A bar exactly `width` cells wide: `fraction` (clamped to [0, 1]) of it in full and partial
// blocks (eighths), the rest in light shade ░.
std::string bar(double fraction, std::size_t width);

// An area graph `rows` cells high in braille (each cell two columns of four dots): one column
// of dots per value (so (values + 1) / 2 cells wide), filled from the bottom to the value's
// height against `full_scale`; an unknown value leaves its column blank, a known one shows at
// least its bottom dot.  The first line is the top.
std::vector<std::string> braille_area(const std::vector<std::optional<double>>& values,
                                      double full_scale, std::size_t rows);

}  // namespace joules::monitor
