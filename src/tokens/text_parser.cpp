#include "tokens/text_parser.hpp"

#include <charconv>
#include <cmath>
#include <limits>

namespace joules::tokens {
namespace {

bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

bool is_name_char(char c) {
  return is_name_start(c) || (c >= '0' && c <= '9');
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const char x = a[i] >= 'A' && a[i] <= 'Z' ? static_cast<char>(a[i] - 'A' + 'a') : a[i];
    if (x != b[i]) return false;
  }
  return true;
}

void skip_blanks(std::string_view s, std::size_t& i) {
  while (i < s.size() && is_blank(s[i]))
    ++i;
}

// A metric name at s[i]; its length, 0 when there is none.
std::size_t metric_name_at(std::string_view s, std::size_t i) {
  if (i >= s.size() || !(is_name_start(s[i]) || s[i] == ':')) return 0;
  std::size_t j = i + 1;
  while (j < s.size() && (is_name_char(s[j]) || s[j] == ':'))
    ++j;
  return j - i;
}

// A sample value as Go's strconv.ParseFloat reads decimal text (what Prometheus uses).
std::optional<double> parse_value(std::string_view t) {
  if (t.empty()) return std::nullopt;
  bool negative = false;
  std::string_view body = t;
  if (body.front() == '+' || body.front() == '-') {
    negative = body.front() == '-';
    body.remove_prefix(1);
  }
  if (iequals(body, "nan")) return std::numeric_limits<double>::quiet_NaN();
  if (iequals(body, "inf") || iequals(body, "infinity")) {
    return negative ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
  }
  if (body.empty() || body.front() == '+' || body.front() == '-') return std::nullopt;
  double v = 0.0;
  const auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), v);
  // Out of range (1e400) is an error for Go's ParseFloat as for from_chars.
  if (ec != std::errc() || end != body.data() + body.size()) return std::nullopt;
  return negative ? -v : v;
}

bool is_timestamp(std::string_view t) {
  if (!t.empty() && t.front() == '-') t.remove_prefix(1);
  if (t.empty() || t.size() > 19) return false;
  for (char c : t) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// Labels from s[i], just after '{', to the closing '}' (i ends just past it).  With `out`, the
// pairs are decoded into it.  Returns what is wrong, or an empty string.
std::string scan_labels(std::string_view s, std::size_t& i, label_pairs* out) {
  while (true) {
    skip_blanks(s, i);
    if (i >= s.size()) return "expected } to close the labels";
    if (s[i] == '}') {
      ++i;
      return {};
    }
    if (!is_name_start(s[i])) return "expected a label name";
    const std::size_t name_at = i;
    while (i < s.size() && is_name_char(s[i]))
      ++i;
    const std::string_view name = s.substr(name_at, i - name_at);
    skip_blanks(s, i);
    if (i >= s.size() || s[i] != '=') return "expected = after a label name";
    ++i;
    skip_blanks(s, i);
    if (i >= s.size() || s[i] != '"') return "expected \" to open a label value";
    ++i;
    std::string value;
    while (true) {
      if (i >= s.size()) return "expected \" to close a label value";
      const char c = s[i++];
      if (c == '"') break;
      if (c == '\\') {
        if (i >= s.size()) return "expected \" to close a label value";
        const char e = s[i++];
        if (e != '\\' && e != '"' && e != 'n') return "invalid escape in a label value";
        if (out != nullptr) value += e == 'n' ? '\n' : e;
        continue;
      }
      if (out != nullptr) value += c;
    }
    if (out != nullptr) out->emplace_back(std::string(name), std::move(value));
    skip_blanks(s, i);
    if (i < s.size() && s[i] == ',') {
      ++i;
      continue;
    }
    if (i < s.size() && s[i] == '}') {
      ++i;
      return {};
    }
    return "expected , or } after a label value";
  }
}

// HELP text may escape only \\ and \n.
bool help_escapes_valid(std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') continue;
    if (i + 1 >= text.size() || (text[i + 1] != '\\' && text[i + 1] != 'n')) return false;
    ++i;
  }
  return true;
}

bool is_type_word(std::string_view t) {
  for (std::string_view w : {"counter", "gauge", "histogram", "summary", "untyped",
                             // OpenMetrics' words, for a server that answers in it anyway
                             "unknown", "info", "stateset", "gaugehistogram"}) {
    if (t == w) return true;
  }
  return false;
}

// A `#` line (s[i] is the '#').  Sets `eof` at `# EOF`.
std::string comment_line(std::string_view s, std::size_t i, bool& eof) {
  ++i;
  skip_blanks(s, i);
  std::size_t j = i;
  while (j < s.size() && !is_blank(s[j]))
    ++j;
  const std::string_view keyword = s.substr(i, j - i);
  if (keyword == "EOF" && j == s.size()) {
    eof = true;
    return {};
  }
  if (keyword != "HELP" && keyword != "TYPE") return {};  // a comment
  i = j;
  skip_blanks(s, i);
  if (i >= s.size()) return {};  // "# HELP" alone: a comment, as Prometheus reads it
  const std::size_t n = metric_name_at(s, i);
  if (n == 0) return "expected a metric name after # " + std::string(keyword);
  i += n;
  if (i < s.size() && !is_blank(s[i]))
    return "expected a metric name after # " + std::string(keyword);
  skip_blanks(s, i);
  const std::string_view rest = s.substr(i);
  if (keyword == "HELP") {
    return help_escapes_valid(rest) ? std::string() : "invalid escape in # HELP text";
  }
  std::size_t k = rest.size();
  while (k > 0 && is_blank(rest[k - 1]))
    --k;
  if (!is_type_word(rest.substr(0, k))) {
    return "expected counter, gauge, histogram, summary or untyped after # TYPE NAME";
  }
  return {};
}

std::string sample_line(std::string_view s, std::size_t i,
                        const std::function<void(const sample_view&)>& on_sample) {
  sample_view v;
  const std::size_t n = metric_name_at(s, i);
  if (n == 0) return "expected a metric name";
  v.name = s.substr(i, n);
  i += n;
  skip_blanks(s, i);
  if (i < s.size() && s[i] == '{') {
    const std::size_t open = ++i;
    if (std::string bad = scan_labels(s, i, nullptr); !bad.empty()) return bad;
    v.labels = s.substr(open, i - 1 - open);
    skip_blanks(s, i);
  }
  std::size_t end = i;
  while (end < s.size() && !is_blank(s[end]))
    ++end;
  if (end == i) return "expected a value after " + std::string(v.name);
  const auto value = parse_value(s.substr(i, end - i));
  if (!value)
    return "expected a number, not '" +
           std::string(s.substr(i, std::min<std::size_t>(end - i, 40))) + "'";
  v.value = *value;
  i = end;
  skip_blanks(s, i);
  if (i < s.size() && s[i] != '#') {
    end = i;
    while (end < s.size() && !is_blank(s[end]))
      ++end;
    if (!is_timestamp(s.substr(i, end - i)))
      return "expected a timestamp in milliseconds or the end of the line";
    i = end;
    skip_blanks(s, i);
  }
  // An OpenMetrics exemplar (" # {trace_id=...} 1.0") is not ours to read.
  if (i < s.size() && s[i] != '#') return "unexpected text after the sample";
  on_sample(v);
  return {};
}

}  // namespace

bool is_metric_name(std::string_view s) {
  return !s.empty() && metric_name_at(s, 0) == s.size();
}

std::optional<parse_error> parse_text_format(
    std::string_view page, const std::function<void(const sample_view&)>& on_sample) {
  std::size_t pos = 0;
  std::size_t line_no = 0;
  while (pos < page.size()) {
    std::size_t end = page.find('\n', pos);
    if (end == std::string_view::npos) end = page.size();
    std::string_view line = page.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    while (!line.empty() && is_blank(line.back()))
      line.remove_suffix(1);
    std::size_t i = 0;
    skip_blanks(line, i);
    if (i == line.size()) continue;
    bool eof = false;
    std::string bad = line[i] == '#' ? comment_line(line, i, eof) : sample_line(line, i, on_sample);
    if (!bad.empty()) return parse_error{line_no, std::move(bad)};
    if (eof) break;
  }
  return std::nullopt;
}

label_pairs decode_labels(std::string_view labels) {
  label_pairs out;
  if (labels.empty()) return out;
  // The text was checked by parse_text_format; the closing brace it stood before is put back.
  const std::string text = std::string(labels) + "}";
  std::size_t i = 0;
  scan_labels(text, i, &out);
  return out;
}

std::optional<label_pairs> parse_label_matchers(std::string_view text) {
  if (text.size() < 2 || text.front() != '{') return std::nullopt;
  label_pairs out;
  std::size_t i = 1;
  if (!scan_labels(text, i, &out).empty() || i != text.size()) return std::nullopt;
  return out;
}

}  // namespace joules::tokens
