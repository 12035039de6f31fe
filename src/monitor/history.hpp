#pragma once
// The last minute of a device's power, and the glyphs `monitor` draws with: a bar (eighths of a
// cell) and a sparkline.  Pure logic, owned by the monitor's main thread.

#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace joules::monitor {

class power_history {
 public:
  // `hold_s`: how long a reading stands for the power after it when no other reading comes
  // (the monitor passes a little more than its interval).
  explicit power_history(double span_s = 60.0, double hold_s = 1.5)
      : span_s_(span_s), hold_s_(hold_s) {}

  // A power reading (W) at monotonic instant t (s); readings older than the span are dropped.
  // Instants must not decrease; an unknown power leaves a gap.
  void add(double t, std::optional<double> power_w);

  // The span ending at `now`, cut into `columns` equal buckets, oldest first: the mean power
  // of the readings in each.  A bucket narrower than the time between readings (a wide
  // sparkline, a long interval) holds none: it takes the reading before it, as long as that is
  // at most hold_s old and no unknown power came after it.  nullopt before the first reading,
  // for unknown power, and where readings stopped (a hung driver).
  std::vector<std::optional<double>> buckets(double now, std::size_t columns) const;

  // The highest reading within the span.
  std::optional<double> peak() const;
  bool empty() const;  // no known reading within the span
  double span_s() const { return span_s_; }

 private:
  double span_s_;
  double hold_s_;
  std::deque<std::pair<double, double>> samples_;  // (t, W); NaN W: power unknown from t
};

// `columns` cells of ▁▂▃▄▅▆▇█ scaled to `full_scale` (values at or above it are █, 0 is ▁), a
// space for an unknown value.
std::string sparkline(const std::vector<std::optional<double>>& values, double full_scale);

// A bar exactly `width` cells wide: `fraction` (clamped to [0, 1]) of it in full and partial
// blocks (eighths), the rest in light shade ░.
std::string bar(double fraction, std::size_t width);

}  // namespace joules::monitor
