#include "export/metrics/self_metrics.hpp"

#include <algorithm>

namespace joules::exporter {

self_metrics::self_metrics(exposition& per_reading, exposition& per_scrape, const label_set& base,
                           const backend_meta& meta, double stale_after_s)
    : base_(base), stale_after_s_(stale_after_s) {
  build_ = base_.with("version", JOULES_VERSION)
               .with("backend", meta.backend)
               .with("driver_version", meta.driver_version)
               .with("nvml_version", find_part(meta, "nvml") != nullptr
                                         ? find_part(meta, "nvml")->library_version
                                         : std::string());
  up_ = &per_scrape.add_family("joules_up",
                               "1 when joules is reading every device it serves: its latest "
                               "readings are fresh, and no device is lost (at start or since) or "
                               "has stopped answering energy and power.",
                               metric_type::gauge);
  build_info_ = &per_reading.add_family(
      "joules_build_info", "joules' version, backend, driver and NVML version, as labels.",
      metric_type::info);
  scrapes_ = &per_scrape.add_family("joules_scrapes_total",
                                    "Scrapes of /metrics served (GET; HEAD is not a scrape), this "
                                    "one included.",
                                    metric_type::counter);
  scrape_duration_ = &per_scrape.add_family(
      "joules_scrape_duration_seconds",
      "Time the previous scrape took to make its response (rendering the metrics when the "
      "readings were new, then its own lines), in seconds.",
      metric_type::gauge);
  ticks_ =
      &per_reading.add_family("joules_sampler_ticks_total",
                              "Rounds of readings the sampler has taken.", metric_type::counter);
  age_ = &per_scrape.add_family("joules_reading_age_seconds",
                                "Age of the latest readings at this scrape, in seconds.",
                                metric_type::gauge);
  web_config_ok_ = &per_scrape.add_family(
      "joules_web_config_last_reload_successful",
      "1 when the last reading of --web-config-file (at start, or since when it changed or at "
      "SIGHUP) was good; 0 when it was not, and the last good configuration is still served.",
      metric_type::gauge);
}

void self_metrics::fill(const sampler_snapshot* snap) {
  build_info_->add_info(build_);
  if (snap != nullptr) ticks_->add(base_, static_cast<double>(snap->ticks));
}

void self_metrics::fill_live(const sampler_snapshot* snap, mono_time now,
                             const serving_stats& stats) {
  bool up = snap != nullptr;
  if (snap != nullptr) {
    const double age = std::max(0.0, seconds_between(snap->taken, now));
    up = age <= stale_after_s_ &&
         std::none_of(snap->devices.begin(), snap->devices.end(),
                      [](const sampler_snapshot::device& d) { return d.lost || d.silent; });
    age_->add(base_, age);
  }
  up_->add(base_, up ? 1.0 : 0.0);
  if (stats.scrapes > 0) scrapes_->add(base_, static_cast<double>(stats.scrapes));
  scrape_duration_->add_if_known(base_, stats.last_scrape_seconds);
  if (stats.web_config_ok) web_config_ok_->add(base_, *stats.web_config_ok ? 1.0 : 0.0);
}

}  // namespace joules::exporter
