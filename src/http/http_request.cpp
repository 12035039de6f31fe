#include "http/http_request.hpp"

#include <algorithm>
#include <optional>

namespace joules::exporter::http {
namespace {

constexpr std::size_t npos = std::string_view::npos;

bool is_tchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != npos;
}

bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), is_tchar);
}

// VCHAR, SP, HTAB and obs-text: what a field value may hold (RFC 9110 §5.5).
bool is_field_value_char(char c) {
  const auto b = static_cast<unsigned char>(c);
  return b == '\t' || (b >= 0x20 && b != 0x7F);
}

bool iequals(std::string_view a, std::string_view b) {
  const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [&](char x, char y) { return lower(x) == lower(y); });
}

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

parse_result fail(int status) {
  parse_result r;
  r.status = parse_status::error;
  r.error_status = status;
  return r;
}

// Where the head ends (just past its empty line), looking for LFs from `from`, or npos.  Then
// `next_resume` is where a later call on the same, longer buffer may start looking again.
std::size_t find_head_end(std::string_view buf, std::size_t from, std::size_t& next_resume) {
  for (std::size_t p = buf.find('\n', from); p != npos; p = buf.find('\n', p + 1)) {
    if (p + 1 < buf.size() && buf[p + 1] == '\n') return p + 2;
    if (p + 2 < buf.size() && buf[p + 1] == '\r' && buf[p + 2] == '\n') return p + 3;
    // Whether an empty line follows this LF is not known until two more bytes have arrived.
    if (p + 2 >= buf.size()) {
      next_resume = p;
      return npos;
    }
  }
  next_resume = buf.size();
  return npos;
}

// The path of a request target, or an empty view when its form is not one served here.
std::string_view path_of(std::string_view target) {
  if (target.front() == '/') return target.substr(0, target.find('?'));
  // absolute-form, which a server must accept (RFC 9112 §3.2.2)
  for (std::string_view scheme : {std::string_view("http://"), std::string_view("https://")}) {
    if (target.size() > scheme.size() && iequals(target.substr(0, scheme.size()), scheme)) {
      const std::string_view rest = target.substr(scheme.size());
      const std::size_t slash = rest.find('/');
      const std::size_t query = rest.find('?');
      if (slash == npos || (query != npos && query < slash)) return "/";
      return rest.substr(slash, query == npos ? npos : query - slash);
    }
  }
  return {};
}

struct field_state {
  unsigned host_fields = 0;
  bool has_content_length = false;
  std::string_view content_length;
  bool has_transfer_encoding = false;
  bool connection_close = false;
  bool connection_keep_alive = false;
  // Accept-Encoding: the weight given to gzip (or x-gzip) and to "*", when listed.
  std::optional<bool> gzip_ok;
  std::optional<bool> any_ok;
  unsigned authorization_fields = 0;
  std::string_view authorization;
};

// Whether a weight ("q=0.5", "Q=0") is above zero; a malformed one counts as zero.
bool weight_above_zero(std::string_view params) {
  while (!params.empty()) {
    const std::size_t semi = params.find(';');
    const std::string_view p = trim_ows(params.substr(0, semi));
    params = semi == npos ? std::string_view() : params.substr(semi + 1);
    if (p.size() < 2 || !iequals(p.substr(0, 2), "q=")) continue;
    const std::string_view q = p.substr(2);
    // qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )  (RFC 9110 §12.4.2)
    if (q.empty() || q.size() > 5 || (q.size() > 1 && q[1] != '.')) return false;
    if (q[0] == '1') return true;
    if (q[0] != '0') return false;
    return q.size() > 2 && q.substr(2).find_first_of("123456789") != npos;
  }
  return true;  // no weight: 1
}

void parse_accept_encoding(std::string_view value, field_state& st) {
  while (!value.empty()) {
    const std::size_t comma = value.find(',');
    const std::string_view element = trim_ows(value.substr(0, comma));
    value = comma == npos ? std::string_view() : value.substr(comma + 1);
    const std::size_t semi = element.find(';');
    const std::string_view coding = trim_ows(element.substr(0, semi));
    const bool ok = semi == npos || weight_above_zero(element.substr(semi + 1));
    if (iequals(coding, "gzip") || iequals(coding, "x-gzip")) {
      st.gzip_ok = st.gzip_ok.value_or(false) || ok;
    } else if (coding == "*") {
      st.any_ok = st.any_ok.value_or(false) || ok;
    }
  }
}

// One field line; returns 0, or the error status.
int parse_field(std::string_view line, field_state& st) {
  if (line.front() == ' ' || line.front() == '\t') return 400;  // obs-fold (RFC 9112 §5.2)
  const std::size_t colon = line.find(':');
  if (colon == npos) return 400;
  const std::string_view name = line.substr(0, colon);
  // No whitespace between name and colon, or anything else outside a token (RFC 9112 §5.1).
  if (!is_token(name)) return 400;
  const std::string_view value = trim_ows(line.substr(colon + 1));
  if (!std::all_of(value.begin(), value.end(), is_field_value_char)) return 400;
  if (iequals(name, "host")) {
    ++st.host_fields;
  } else if (iequals(name, "content-length")) {
    if (value.empty() ||
        !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return 400;
    }
    if (st.has_content_length && value != st.content_length) return 400;
    st.has_content_length = true;
    st.content_length = value;
  } else if (iequals(name, "transfer-encoding")) {
    st.has_transfer_encoding = true;
  } else if (iequals(name, "connection")) {
    std::string_view rest = value;
    while (!rest.empty()) {
      const std::size_t comma = rest.find(',');
      const std::string_view option = trim_ows(rest.substr(0, comma));
      if (iequals(option, "close")) st.connection_close = true;
      if (iequals(option, "keep-alive")) st.connection_keep_alive = true;
      rest = comma == npos ? std::string_view() : rest.substr(comma + 1);
    }
  } else if (iequals(name, "accept-encoding")) {
    parse_accept_encoding(value, st);
  } else if (iequals(name, "authorization")) {
    ++st.authorization_fields;
    st.authorization = value;
  }
  return 0;
}

// "HTTP/1.1" -> minor version, or the error status.
int parse_version(std::string_view v, unsigned& minor) {
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (v.size() != 8 || !v.starts_with("HTTP/") || !digit(v[5]) || v[6] != '.' || !digit(v[7])) {
    return 400;
  }
  if (v[5] != '1') return 505;
  // A later 1.x is answered as 1.1, the highest minor version this server speaks (RFC 9110 §6.2).
  minor = v[7] == '0' ? 0U : 1U;
  return 0;
}

}  // namespace

parse_result parse_request(std::string_view buf, const parser_limits& limits, std::size_t* resume) {
  // Empty lines before the request line are skipped (RFC 9112 §2.2).
  std::size_t start = 0;
  while (start < buf.size() && (buf[start] == '\n' || buf[start] == '\r')) {
    if (buf[start] == '\r') {
      if (start + 1 == buf.size()) break;
      if (buf[start + 1] != '\n') return fail(400);
    }
    ++start;
  }
  if (start >= limits.max_head_bytes) return fail(400);

  std::size_t from = start;
  if (resume != nullptr) from = std::max(from, *resume);
  std::size_t next_resume = from;
  const std::size_t end = find_head_end(buf, from, next_resume);
  if (resume != nullptr) *resume = end == npos ? next_resume : 0;
  if (end == npos || end > limits.max_head_bytes) {
    const std::size_t scanned = std::min(buf.size(), limits.max_head_bytes);
    if (end == npos && buf.size() < limits.max_head_bytes) return {};
    // The request line alone does not fit: 414; otherwise the fields do not: 431.
    const bool line_fits = buf.substr(start, scanned - start).find('\n') != npos;
    return fail(line_fits ? 431 : 414);
  }

  parse_result r;
  field_state st;
  std::size_t fields = 0;
  std::size_t pos = start;
  bool first = true;
  while (pos < end) {
    const std::size_t eol = buf.find('\n', pos);
    std::string_view line = buf.substr(pos, eol - pos);
    pos = eol + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find('\r') != npos) return fail(400);  // a bare CR (RFC 9112 §2.2)
    if (line.empty()) break;                        // the empty line that ends the head
    if (first) {
      first = false;
      const std::size_t sp1 = line.find(' ');
      const std::size_t sp2 = sp1 == npos ? npos : line.find(' ', sp1 + 1);
      if (sp2 == npos || line.find(' ', sp2 + 1) != npos) return fail(400);
      r.head.method = line.substr(0, sp1);
      r.head.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
      if (!is_token(r.head.method) || r.head.target.empty()) return fail(400);
      if (!std::all_of(r.head.target.begin(), r.head.target.end(),
                       [](char c) { return c > 0x20 && c < 0x7F; })) {
        return fail(400);
      }
      if (const int e = parse_version(line.substr(sp2 + 1), r.head.version_minor)) return fail(e);
      r.head.path = path_of(r.head.target);
      // "*" (OPTIONS) and host:port (CONNECT) are valid targets for methods answered 405 anyway.
      const bool other_form = r.head.method == "OPTIONS" || r.head.method == "CONNECT";
      if (r.head.path.empty() && !other_form) return fail(400);
      continue;
    }
    if (++fields > limits.max_fields) return fail(431);
    if (const int e = parse_field(line, st)) return fail(e);
  }

  // HTTP/1.1 requires exactly one Host (RFC 9112 §3.2); 1.0 may leave it out.
  if (st.host_fields > 1 || (r.head.version_minor == 1 && st.host_fields == 0)) return fail(400);
  // Two sets of credentials: which one counts is not for the server to guess.
  if (st.authorization_fields > 1) return fail(400);
  r.head.authorization = st.authorization;
  // Body framing: both at once is how requests are smuggled (RFC 9112 §6.1); any body is refused.
  if (st.has_transfer_encoding && (st.has_content_length || r.head.version_minor == 0)) {
    return fail(400);
  }
  if (st.has_transfer_encoding) return fail(413);
  if (st.has_content_length && st.content_length.find_first_not_of('0') != npos) return fail(413);

  r.head.keep_alive = r.head.version_minor == 1 ? !st.connection_close
                                                : st.connection_keep_alive && !st.connection_close;
  r.head.accepts_gzip = st.gzip_ok ? *st.gzip_ok : st.any_ok.value_or(false);
  r.status = parse_status::complete;
  r.consumed = end;
  return r;
}

}  // namespace joules::exporter::http
