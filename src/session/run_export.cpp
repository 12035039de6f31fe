#include "session/run_export.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "export/metrics/label_policy.hpp"
#include "term/messages.hpp"
#include "util/error.hpp"
#include "util/json_writer.hpp"
#include "util/strings.hpp"

namespace joules::session {
namespace {

// RFC 9110 token characters, for header names.
bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  });
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::pair<std::string, std::string> parse_otlp_header(const std::string& h) {
  const auto eq = h.find('=');
  const std::string key = h.substr(0, eq);
  const std::string value = eq == std::string::npos ? "" : h.substr(eq + 1);
  if (eq == std::string::npos || !is_token(key) ||
      value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
    throw usage_error(fmt::format(
        "--otlp-header '{}': expected KEY=VALUE, KEY an HTTP header name, VALUE on one line", h));
  }
  for (std::string_view own : {"host", "content-length", "content-type", "content-encoding",
                               "connection", "transfer-encoding", "expect"}) {
    if (iequals(key, own))
      throw usage_error(fmt::format("--otlp-header '{}': joules sets {} itself", h, key));
  }
  return {key, std::string(trim(value))};
}

exporter::http_url parse_otlp_url(const std::string& text) {
  auto url = exporter::parse_http_url(text, "--otlp");
  if (url.path == "/") url.path = "/v1/metrics";  // OTLP/HTTP's default path
  return url;
}

// libcurl reads a TLS file only at the first request, long after the command started: it
// must be readable now and a PEM file holding a `-----BEGIN <kind>` block (any key kind for
// "PRIVATE KEY"; an encrypted one is refused, joules has no passphrase to give).
std::string pem_file(const std::string& path, std::string_view option, std::string_view kind,
                     std::string_view what) {
  const auto bad = [&](std::string_view why) {
    return usage_error(
        fmt::format("{} '{}': {}; expected a readable PEM file of {}", option, path, why, what));
  };
  const std::unique_ptr<std::FILE, decltype(&std::fclose)> f(std::fopen(path.c_str(), "rb"),
                                                             &std::fclose);
  if (!f) throw bad(std::strerror(errno));
  std::string text(std::size_t{1} << 20, '\0');  // a CA bundle is ~200 kB; a marker comes early
  text.resize(std::fread(text.data(), 1, text.size(), f.get()));
  if (std::ferror(f.get()) != 0) throw bad(std::strerror(errno));
  const std::size_t begin = text.find("-----BEGIN ");
  if (begin == std::string::npos) throw bad("no PEM block in it");
  if (text.find(fmt::format("{}-----", kind), begin) == std::string::npos) {
    throw bad(fmt::format("no {} in it", kind));
  }
  if (kind == "PRIVATE KEY" && (text.find("ENCRYPTED PRIVATE KEY") != std::string::npos ||
                                text.find("Proc-Type: 4,ENCRYPTED") != std::string::npos)) {
    throw bad("the key is encrypted");
  }
  return path;
}

void check_otlp_tls(const export_settings& s) {
  const exporter::http_tls& t = s.otlp_tls;
  const bool tls = !t.ca_file.empty() || !t.client_cert.empty() || !t.client_key.empty();
  if (tls && s.otlp && !s.otlp->https) {
    throw usage_error(fmt::format(
        "--otlp-ca-file, --otlp-client-cert and --otlp-client-key apply only to an https:// "
        "--otlp URL, not '{}'",
        s.otlp->display()));
  }
  if (t.client_cert.empty() != t.client_key.empty())
    throw usage_error("--otlp-client-cert and --otlp-client-key go together: give both or neither");
}

exporter::label_set export_base_labels(const run_context& ctx) {
  exporter::label_set base;
  if (!ctx.run_id.empty()) base.add("run_id", ctx.run_id);
  base.add("hostname", ctx.hostname);
  const auto user = exporter::apply_label_policy(ctx.labels, exporter::kExporterLabelNames);
  for (const auto& line : user.renamed)
    term::print_note(line);
  for (const auto& [k, v] : user.labels)
    base.add(k, v);
  return base;
}

std::vector<std::pair<std::string, std::string>> otlp_resource(const run_context& ctx) {
  std::vector<std::pair<std::string, std::string>> r = {
      {"service.name", "joules"}, {"service.version", JOULES_VERSION}, {"host.name", ctx.hostname}};
  if (!ctx.run_id.empty()) r.emplace_back("joules.run_id", ctx.run_id);
  for (const auto& [k, v] : ctx.labels)
    r.emplace_back(k, v);
  return r;
}

exporters::exporters(const export_settings& settings, const exporter::source_factory& source,
                     const run_context& ctx) {
  if (settings.prometheus) {
    prometheus_ = std::make_unique<exporter::prometheus_endpoint>(*settings.prometheus, source,
                                                                  export_base_labels(ctx));
    std::fprintf(stderr, "joules: metrics at http://%s/metrics\n",
                 prometheus_->address().text().c_str());
  }
  if (settings.otlp) {
    // Through a proxy, the collector's name may resolve only at the proxy.
    if (!exporter::proxy_configured(*settings.otlp))
      exporter::check_resolves(*settings.otlp, "--otlp");
    exporter::otlp_options o;
    o.url = *settings.otlp;
    o.tls = settings.otlp_tls;
    o.headers = settings.otlp_headers;
    o.interval = settings.otlp_interval;
    o.timeout = std::min<std::chrono::milliseconds>(
        std::chrono::milliseconds(5000),
        std::max(settings.otlp_interval, std::chrono::milliseconds(1000)));
    o.resource = otlp_resource(ctx);
    otlp_url_ = settings.otlp->display();
    otlp_ = std::make_unique<exporter::otlp_exporter>(std::move(o), source);
  }
}

exporters::~exporters() {
  finish(std::chrono::milliseconds(0));
}

void exporters::start() {
  if (prometheus_) prometheus_->start();
  if (otlp_) otlp_->start();
}

void exporters::finish(std::chrono::milliseconds budget) {
  if (otlp_) otlp_->finish(budget);
  if (prometheus_) prometheus_->stop();
}

std::string exporters::report_json() const {
  if (!prometheus_ && !otlp_) return {};
  json_writer w;
  w.begin_object();
  if (prometheus_) {
    const auto s = prometheus_->stats();
    w.key("prometheus").begin_object();
    w.field("address", prometheus_->address().text());
    w.field("scrapes", s.scrapes_served).field("request_errors", s.request_errors);
    w.end_object();
  }
  if (otlp_) {
    const auto s = otlp_->stats();
    w.key("otlp").begin_object();
    w.field("url", otlp_url_);
    w.field("batches", s.collected).field("exported", s.exported);
    w.field("failed", s.failed).field("dropped", s.dropped);
    w.field("requests", s.attempts).field("retries", s.retries);
    w.field("last_error", s.last_error.empty() ? std::optional<std::string>() : s.last_error);
    w.end_object();
  }
  w.end_object();
  return w.take();
}

std::string exporters::loss_line() const {
  if (!otlp_) return {};
  const auto s = otlp_->stats();
  if (s.failed == 0 && s.dropped == 0) return {};
  return fmt::format(
      "joules: OTLP: {} of {} batches not delivered to {} ({} failed, {} dropped); last error: {}",
      s.failed + s.dropped, s.collected, otlp_url_, s.failed, s.dropped,
      s.last_error.empty() ? "none" : s.last_error);
}

}  // namespace joules::session
