#include "export/prometheus_endpoint.hpp"

#include "export/text_format.hpp"

namespace joules::exporter {

prometheus_endpoint::prometheus_endpoint(const listen_address& address,
                                         const source_factory& source, const label_set& base)
    : source_(source(exposition_, base)) {
  http_server_options options;
  options.address = address;
  server_ = std::make_unique<http_server>(options, [this](std::string& body) { write(body); });
}

prometheus_endpoint::~prometheus_endpoint() {
  stop();
}

void prometheus_endpoint::start() {
  server_->start();
}

void prometheus_endpoint::stop() {
  server_->stop();
}

void prometheus_endpoint::write(std::string& body) {
  const mono_time begin = steady::now();
  ++scrapes_;
  exposition_.clear_samples();
  source_->fill(begin, serving_stats{scrapes_, last_scrape_s_});
  write_text_format(exposition_, body);
  last_scrape_s_ = seconds_between(begin, steady::now());
}

}  // namespace joules::exporter
