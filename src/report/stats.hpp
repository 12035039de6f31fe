#pragma once
// The statistics of the reports: quantiles, histograms, the standard error of a mean over
// consecutive batches (how much a run's energy per step moves by itself, step to step: the
// run-to-run noise `diff` holds a change against), and the merging of a long series into at most
// N buckets of min/mean/max for a plot.  Pure; no units of their own.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace joules::report {

// The q-quantile (0..1) of `values`, linear between order statistics; nullopt when empty.
std::optional<double> quantile(std::vector<double> values, double q);

// Histogram of `values` in `bins` equal bins over [lo, hi]; values outside are counted apart.
struct histogram {
  double lo = 0.0;
  double hi = 0.0;
  std::vector<std::uint64_t> counts;
  std::uint64_t below = 0;
  std::uint64_t above = 0;
};
// Bins span the 0.5 % to 99.5 % quantiles, so one outlier step does not flatten the rest.
histogram make_histogram(const std::vector<double>& values, std::size_t bins);

// A ratio sum(num) / sum(den) over consecutive items, and the standard error of that ratio
// estimated from `batches` consecutive batches of equal count (batch means: consecutive steps
// are correlated, which the naive standard error of single steps ignores).  The error is
// nullopt with fewer than 2 items per batch.
struct ratio_estimate {
  std::optional<double> value;
  std::optional<double> standard_error;
};
ratio_estimate batch_ratio(const std::vector<double>& num, const std::vector<double>& den,
                           std::size_t batches = 10);

// A point of a time series, and the buckets a plot draws it with.
struct series_point {
  double x = 0.0;
  double y = 0.0;
  double weight = 1.0;       // the mean is weighted by it (the duration a point stands for)
  std::optional<double> lo;  // the point's own min and max, when it summarises several readings
  std::optional<double> hi;
};
struct series_bucket {
  double x0 = 0.0;
  double x1 = 0.0;
  double min = 0.0;
  double mean = 0.0;
  double max = 0.0;
};
// Points merged into at most `n` buckets of equal width over [x0, x1] (empty buckets dropped;
// points out of range go to the nearest bucket).  Fewer points than buckets are kept as they are.
std::vector<series_bucket> decimate(const std::vector<series_point>& points, double x0, double x1,
                                    std::size_t n);

}  // namespace joules::report
