#pragma once
// joules' own health, next to what it measures: `joules_up`, the build, how many scrapes it has
// served and how long the last one took, and how fresh its readings are.
//
// Two kinds of family, on two expositions: those that change only with the readings (the build,
// the sampler's rounds), rendered once per snapshot with the other metrics; and those that
// change at every scrape (up, scrapes, scrape duration, age of the readings), rendered for each
// response into its small tail.  Each family is on one exposition only, so a response made of
// both still has every family once.
//
// Thread-safety: none; one per pair of expositions, used by the thread that owns them.

#include <cstdint>
#include <optional>
#include <string_view>

#include "backends/backend.hpp"
#include "export/metrics/exposition.hpp"
#include "sampler/sampler.hpp"

namespace joules::exporter {

// What the serving side knows about itself at a fill.
struct serving_stats {
  std::uint64_t scrapes = 0;                  // including the one being served
  std::optional<double> last_scrape_seconds;  // the previous scrape's time to make its response
  // serve --web-config-file: whether the file's last reading was good (none without the file).
  std::optional<bool> web_config_ok;
};

class self_metrics {
 public:
  // `stale_after_s`: a snapshot older than this makes joules_up 0 (the sampler is stuck).
  self_metrics(exposition& per_reading, exposition& per_scrape, const label_set& base,
               const backend_meta& meta, double stale_after_s);

  // The families of `per_reading`, from `snap` (null before the first reading).
  void fill(const sampler_snapshot* snap);
  // The families of `per_scrape`, at `now`, for readings `snap`.
  void fill_live(const sampler_snapshot* snap, mono_time now, const serving_stats& stats);

 private:
  label_set base_;
  label_set build_;
  double stale_after_s_;
  metric_family* up_;
  metric_family* build_info_;
  metric_family* scrapes_;
  metric_family* scrape_duration_;
  metric_family* ticks_;
  metric_family* age_;
  metric_family* web_config_ok_;
};

}  // namespace joules::exporter
