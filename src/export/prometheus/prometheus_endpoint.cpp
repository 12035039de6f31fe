#include "export/prometheus/prometheus_endpoint.hpp"

#include "export/metrics/text_format.hpp"
#include "http/web_config_reload.hpp"

namespace joules::exporter {

prometheus_endpoint::prometheus_endpoint(const http_server_options& options,
                                         const source_factory& source, const label_set& base)
    : source_(source(per_state_, per_scrape_, base)), web_config_(options.web_config) {
  server_ = std::make_unique<http_server>(
      options, [this](std::string& tail, const metrics_request& r) { return write(tail, r); });
}

prometheus_endpoint::prometheus_endpoint(const listen_address& address,
                                         const source_factory& source, const label_set& base)
    : prometheus_endpoint(http_server_options{.address = address}, source, base) {}

prometheus_endpoint::~prometheus_endpoint() {
  stop();
}

void prometheus_endpoint::start() {
  server_->start();
}

void prometheus_endpoint::stop() {
  server_->stop();
}

metrics_body prometheus_endpoint::write(std::string& tail, const metrics_request& request) {
  const mono_time begin = steady::now();
  if (request.scrape) ++scrapes_;
  // A state taken but not rendered (the rendering threw) is rendered at the next scrape.
  if (source_->update()) stale_ = true;
  if (stale_ || !rendered_) {
    per_state_.clear_samples();
    source_->fill();
    auto text = std::make_shared<std::string>();
    // The next text is about as long as the last: one allocation, no regrowth.
    if (rendered_) text->reserve(rendered_->size() + rendered_->size() / 8);
    write_text_format(per_state_, *text);
    rendered_ = std::move(text);
    gzipped_.reset();
    stale_ = false;
    ++renders_;
  }
  per_scrape_.clear_samples();
  serving_stats stats{scrapes_, last_scrape_s_, std::nullopt};
  if (web_config_) stats.web_config_ok = web_config_->last_reload_successful();
  source_->fill_live(begin, stats);
  metrics_body out;
  out.content_type = kTextFormatContentType;
  if (request.gzip) {
    if (!gzipped_) gzipped_ = std::make_shared<const gzip_prefix>(gzip_begin(*rendered_));
    tail_text_.clear();
    write_text_format(per_scrape_, tail_text_);
    gzip_end(*gzipped_, tail_text_, tail);
    // Shares the ownership of the prefix, pointing at its bytes.
    out.shared = std::shared_ptr<const std::string>(gzipped_, &gzipped_->bytes);
    out.gzip = true;
  } else {
    write_text_format(per_scrape_, tail);
    out.shared = rendered_;
  }
  if (request.scrape) last_scrape_s_ = seconds_between(begin, steady::now());
  return out;
}

}  // namespace joules::exporter
