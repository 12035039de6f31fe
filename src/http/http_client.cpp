#include "http/http_client.hpp"

#include <curl/curl.h>
#include <fmt/format.h>
#include <netdb.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "http/curl_library.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

namespace joules::exporter {
namespace {

constexpr std::size_t kMaxBody = 1024;

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool env_set(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0';
}

// libcurl, loaded (http/curl_library.hpp) and initialised once per process, whichever thread
// comes first: curl_global_init() is not safe to call twice at once
// (https://curl.se/libcurl/c/curl_global_init.html).  Never cleaned up: libcurl lives until exit.
const curl_library& init_curl_once() {
  std::string why;
  const curl_library* c = load_curl(&why);
  if (c == nullptr) throw fatal_error(fmt::format("OTLP: {}", why));
  static std::once_flag once;
  static CURLcode rc = CURLE_OK;
  std::call_once(once, [c] { rc = c->global_init(CURL_GLOBAL_DEFAULT); });
  if (rc != CURLE_OK)
    throw fatal_error(fmt::format("OTLP: cannot initialise libcurl: {}", c->easy_strerror(rc)));
  return *c;
}

// Errors that sending again cannot mend: the URL, a certificate the client does not trust or
// cannot use, a file it cannot read.  Everything else (refused, reset, timed out, a name that
// does not resolve now) may pass.
bool transient(CURLcode code) {
  switch (code) {
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_FILESIZE_EXCEEDED:
    case CURLE_TOO_MANY_REDIRECTS:
    case CURLE_OUT_OF_MEMORY:
      return false;
    default:
      return true;
  }
}

}  // namespace

// --- URLs ----------------------------------------------------------------------------------

std::string http_url::authority() const {
  const bool v6 = host.find(':') != std::string::npos;
  return v6 ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

std::string http_url::text() const {
  return fmt::format("{}://{}{}", https ? "https" : "http", authority(), path);
}

std::string http_url::display() const {
  const std::size_t query = path.find_first_of("?#");
  return fmt::format("{}://{}{}", https ? "https" : "http", authority(), path.substr(0, query));
}

http_url parse_http_url(std::string_view value, std::string_view option) {
  const auto bad = [&](std::string_view why) {
    return usage_error(
        fmt::format("{} '{}': {}; expected http[s]://HOST[:PORT][/PATH], e.g. "
                    "http://127.0.0.1:4318/v1/metrics",
                    option, value, why));
  };
  http_url url;
  std::string_view rest;
  if (value.substr(0, 7) == "http://") {
    rest = value.substr(7);
  } else if (value.substr(0, 8) == "https://") {
    url.https = true;
    url.port = 443;
    rest = value.substr(8);
  } else {
    throw bad("not an http:// or https:// URL");
  }
  const std::size_t slash = rest.find('/');
  const std::string_view authority = rest.substr(0, slash);
  url.path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (authority.find('@') != std::string_view::npos)
    throw bad("credentials belong in --otlp-header");
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) throw bad("unclosed [");
    url.host = std::string(authority.substr(1, close - 1));
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') throw bad("expected :PORT after ]");
      port_text = after.substr(1);
    }
  } else {
    const std::size_t colon = authority.rfind(':');
    url.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
    if (url.host.find(':') != std::string::npos) throw bad("an IPv6 address goes in [brackets]");
  }
  if (url.host.empty()) throw bad("no host");
  for (char c : url.host) {
    const auto b = static_cast<unsigned char>(c);
    if (b <= ' ' || b >= 127 || std::string_view("/?#[]%\\").find(c) != std::string_view::npos)
      throw bad("not a host name or address");
  }
  if (!port_text.empty() || authority.find(':') != std::string_view::npos) {
    const auto port = parse_uint(port_text, 1, 65535);
    if (!port) throw bad("the port must be 1 to 65535");
    url.port = static_cast<std::uint16_t>(*port);
  }
  for (char c : url.path) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 127)
      throw bad("spaces or controls in the path");
  }
  return url;
}

bool proxy_configured(const http_url& url) {
  // libcurl reads http_proxy in lower case only (an upper-case HTTP_PROXY can be set by a
  // request header in CGI programs), the others in both cases.
  if (env_set("all_proxy") || env_set("ALL_PROXY")) return true;
  return url.https ? env_set("https_proxy") || env_set("HTTPS_PROXY") : env_set("http_proxy");
}

void check_resolves(const http_url& url, std::string_view option) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(url.port);
  if (const int rc = ::getaddrinfo(url.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    throw usage_error(fmt::format("{}: cannot resolve {}: {}", option, url.host,
                                  rc == EAI_SYSTEM ? std::strerror(errno) : ::gai_strerror(rc)));
  }
  ::freeaddrinfo(found);
}

std::string printable_excerpt(std::string_view text, std::size_t max) {
  std::string out;
  for (const char c : text.substr(0, max)) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b >= 0x7F || c == '\\') {
      out += fmt::format("\\x{:02x}", b);
    } else {
      out += c;
    }
  }
  if (text.size() > max) out += "...";
  return out;
}

// --- the client ----------------------------------------------------------------------------

struct http_client::handles {
  const curl_library& c;
  CURL* easy = nullptr;
  CURLM* multi = nullptr;  // holds the kept-alive connection between requests
  curl_slist* headers = nullptr;
  std::string url;
  http_tls tls;
  char error[CURL_ERROR_SIZE] = {};
  http_result* result = nullptr;  // of the request in flight
  std::size_t body_limit = kMaxBody;
  bool end_over_limit = false;  // get(): a body past body_limit ends the transfer

  explicit handles(const curl_library& lib) : c(lib) {}
  handles(const handles&) = delete;
  handles& operator=(const handles&) = delete;
  ~handles() {
    if (multi != nullptr && easy != nullptr) c.multi_remove_handle(multi, easy);
    if (easy != nullptr) c.easy_cleanup(easy);
    if (multi != nullptr) c.multi_cleanup(multi);
    c.slist_free_all(headers);
  }

  static std::size_t on_body(char* data, std::size_t size, std::size_t n, void* self) {
    handles& h = *static_cast<handles*>(self);
    http_result& r = *h.result;
    const std::size_t bytes = size * n;
    const std::size_t room = h.body_limit - std::min(h.body_limit, r.body.size());
    if (bytes > room && h.end_over_limit) {
      r.too_large = true;
      return 0;  // libcurl ends the transfer with CURLE_WRITE_ERROR
    }
    r.body.append(data, std::min(bytes, room));
    return bytes;  // the rest is read and dropped
  }

  // Every header line of every response, a proxy's answer to CONNECT included: a status line
  // starts the headers of a new response.
  static std::size_t on_header(char* data, std::size_t size, std::size_t n, void* self) {
    http_result& r = *static_cast<handles*>(self)->result;
    const std::string_view line(data, size * n);
    if (line.starts_with("HTTP/")) {
      r.retry_after.clear();
      r.body.clear();
    }
    const std::size_t colon = line.find(':');
    if (colon != std::string_view::npos && iequals(trim(line.substr(0, colon)), "retry-after"))
      r.retry_after = std::string(trim(line.substr(colon + 1)));
    return size * n;
  }
};

http_client::http_client(http_url url, http_tls tls,
                         std::vector<std::pair<std::string, std::string>> headers)
    : h_(std::make_unique<handles>(init_curl_once())), cut_off_ns_(INT64_MAX) {
  handles& h = *h_;
  const curl_library& c = h.c;
  h.url = url.text();
  h.tls = std::move(tls);
  h.easy = c.easy_init();
  h.multi = c.multi_init();
  if (h.easy == nullptr || h.multi == nullptr)
    throw fatal_error("OTLP: cannot make a libcurl handle");
  // "Expect: 100-continue" would cost a round trip (or a second, with servers that ignore it).
  headers.emplace_back("Expect", "");
  for (const auto& [k, v] : headers) {
    // "Key;" sends an empty header; "Key:" removes one libcurl would send.
    const std::string line = v.empty() ? k + (k == "Expect" ? ":" : ";") : k + ": " + v;
    curl_slist* more = c.slist_append(h.headers, line.c_str());
    if (more == nullptr) throw fatal_error("OTLP: out of memory");
    h.headers = more;
  }
  const std::string agent = fmt::format("joules/{}", JOULES_VERSION);
  CURL* e = h.easy;
  c.easy_setopt(e, CURLOPT_URL, h.url.c_str());
  c.easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  c.easy_setopt(e, CURLOPT_USERAGENT, agent.c_str());  // copied by libcurl
  c.easy_setopt(e, CURLOPT_HTTPHEADER, h.headers);
  c.easy_setopt(e, CURLOPT_POST, 1L);
  // No signals: libcurl runs on a thread of a process that handles its own (and SIGPIPE is
  // ignored by joules, app.cpp).
  c.easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  c.easy_setopt(e, CURLOPT_ERRORBUFFER, h.error);
  c.easy_setopt(e, CURLOPT_WRITEFUNCTION, &handles::on_body);
  c.easy_setopt(e, CURLOPT_WRITEDATA, &h);
  c.easy_setopt(e, CURLOPT_HEADERFUNCTION, &handles::on_header);
  c.easy_setopt(e, CURLOPT_HEADERDATA, &h);
  // CURLOPT_PROXY is left unset: libcurl then takes the proxy from the environment.
  if (!h.tls.ca_file.empty()) {
    // Only this file's CAs, as the OpenTelemetry collector's own `ca_file`.
    c.easy_setopt(e, CURLOPT_CAINFO, h.tls.ca_file.c_str());
    c.easy_setopt(e, CURLOPT_CAPATH, static_cast<const char*>(nullptr));
  }
  if (!h.tls.client_cert.empty()) {
    c.easy_setopt(e, CURLOPT_SSLCERT, h.tls.client_cert.c_str());
    c.easy_setopt(e, CURLOPT_SSLKEY, h.tls.client_key.c_str());
  }
}

http_client::~http_client() = default;

void http_client::cut_off(mono_time deadline) {
  const std::int64_t ns = monotonic_ns(deadline);
  std::int64_t now = cut_off_ns_.load();
  while (ns < now && !cut_off_ns_.compare_exchange_weak(now, ns)) {
  }
  h_->c.multi_wakeup(h_->multi);  // safe from any thread
}

http_result http_client::post(std::string_view body, std::chrono::milliseconds timeout,
                              std::chrono::milliseconds connect_timeout) {
  handles& h = *h_;
  const curl_library& c = h.c;
  http_result result;
  CURL* e = h.easy;
  c.easy_setopt(e, CURLOPT_POST, 1L);
  c.easy_setopt(e, CURLOPT_POSTFIELDS, body.data());
  c.easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  h.body_limit = kMaxBody;
  h.end_over_limit = false;
  perform(result, timeout, connect_timeout);
  return result;
}

http_result http_client::get(std::chrono::milliseconds timeout,
                             std::chrono::milliseconds connect_timeout, std::size_t max_body) {
  handles& h = *h_;
  const curl_library& c = h.c;
  http_result result;
  CURL* e = h.easy;
  c.easy_setopt(e, CURLOPT_HTTPGET, 1L);
  // Every encoding libcurl can decode (a 200 kB page of a Python server gzips to ~20 kB).
  c.easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
  h.body_limit = max_body;
  h.end_over_limit = true;
  perform(result, timeout, connect_timeout);
  if (result.too_large) {
    result.status = 0;
    result.transient = false;
    result.error = fmt::format("the page is larger than {} bytes", max_body);
    result.body.clear();
  }
  return result;
}

void http_client::perform(http_result& result, std::chrono::milliseconds timeout,
                          std::chrono::milliseconds connect_timeout) {
  handles& h = *h_;
  h.result = &result;
  h.error[0] = '\0';
  CURL* e = h.easy;
  const curl_library& c = h.c;
  c.easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(std::max<long long>(1, timeout.count())));
  c.easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                static_cast<long>(std::max<long long>(1, connect_timeout.count())));

  // The multi interface, so that cut_off() can end a request at once (curl_multi_wakeup), where
  // curl_easy_perform() would only look at a flag about once a second.
  CURLcode code = CURLE_OK;
  bool done = false;
  if (const CURLMcode m = c.multi_add_handle(h.multi, e); m != CURLM_OK) {
    result.error = c.multi_strerror(m);
    h.result = nullptr;
    return;
  }
  while (true) {
    int running = 0;
    if (const CURLMcode m = c.multi_perform(h.multi, &running); m != CURLM_OK) {
      result.error = c.multi_strerror(m);
      break;
    }
    int left = 0;
    while (CURLMsg* msg = c.multi_info_read(h.multi, &left)) {
      if (msg->msg == CURLMSG_DONE) {
        code = msg->data.result;
        done = true;
      }
    }
    if (done) break;
    const auto until_cut = std::chrono::nanoseconds(cut_off_ns_.load()) -
                           std::chrono::nanoseconds(monotonic_ns(steady::now()));
    if (until_cut.count() <= 0) {
      result.cut_off = true;
      break;
    }
    // libcurl shortens the wait to its own timers (timeouts, happy eyeballs) by itself.
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(until_cut).count();
    c.multi_poll(h.multi, nullptr, 0, static_cast<int>(std::min<long long>(ms, 1000)), nullptr);
  }
  c.multi_remove_handle(h.multi, e);  // the connection stays in the multi handle's cache
  h.result = nullptr;
  if (!done) {
    if (result.cut_off) result.error = "cut off";
    return;
  }
  if (code != CURLE_OK) {
    result.error = h.error[0] != '\0' ? std::string(h.error) : c.easy_strerror(code);
    result.transient = transient(code);
    result.retry_after.clear();
    result.body.clear();
    return;
  }
  long status = 0;
  c.easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
  result.status = static_cast<int>(status);
}

}  // namespace joules::exporter
