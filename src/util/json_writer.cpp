#include "util/json_writer.hpp"

#include <array>
#include <charconv>
#include <cmath>

#include "text/utf8.hpp"
#include "util/number_text.hpp"

namespace joules {

void append_json_escaped(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  // Bytes that pass as they are: printable ASCII but the quote and the backslash.  Keys and most
  // values are nothing else, and go out in one append.
  static constexpr auto kPlain = [] {
    std::array<bool, 256> t{};
    for (int c = 0x20; c < 0x7F; ++c)
      t[static_cast<std::size_t>(c)] = c != '"' && c != '\\';
    return t;
  }();
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t run = i;
    while (run < s.size() && kPlain[static_cast<unsigned char>(s[run])])
      ++run;
    if (run > i) {
      out.append(s.data() + i, run - i);
      i = run;
      if (i == s.size()) break;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const std::size_t n = text::utf8_sequence_length(s, i);
      if (n == 0) {
        out += text::kReplacementChar;
        ++i;
      } else if (n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0) {
        // A C1 control (U+0080..U+009F, CSI among them) as \u00XX: JSON that is printed on a
        // terminal (`monitor --json`, `doctor --json`) never reaches it as a control.
        const auto c1 = static_cast<unsigned char>(s[i + 1]);
        out += "\\u00";
        out += kHex[c1 >> 4U];
        out += kHex[c1 & 0xFU];
        i += 2;
      } else {
        out.append(s.substr(i, n));
        i += n;
      }
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20 || c == 0x7F) {
          out += "\\u00";
          out += kHex[c >> 4U];
          out += kHex[c & 0xFU];
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
}

void append_json_number(std::string& out, double d) {
  if (!std::isfinite(d)) {
    out += "null";
    return;
  }
  if (d == 0.0) d = 0.0;  // no "-0"
  std::array<char, 32> buf{};
  auto [end, ec] = to_chars_clean(buf.data(), buf.data() + buf.size(), d);
  out.append(buf.data(), end);
}

void json_writer::separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (depth_ > 0) {
    const std::uint64_t bit = 1ULL << (depth_ - 1);
    if (has_items_ & bit) out_ += ',';
    has_items_ |= bit;
  }
}

json_writer& json_writer::begin_object() {
  separate();
  out_ += '{';
  ++depth_;
  has_items_ &= ~(1ULL << (depth_ - 1));
  return *this;
}

json_writer& json_writer::end_object() {
  out_ += '}';
  --depth_;
  return *this;
}

json_writer& json_writer::begin_array() {
  separate();
  out_ += '[';
  ++depth_;
  has_items_ &= ~(1ULL << (depth_ - 1));
  return *this;
}

json_writer& json_writer::end_array() {
  out_ += ']';
  --depth_;
  return *this;
}

json_writer& json_writer::key(std::string_view k) {
  separate();
  out_ += '"';
  append_json_escaped(out_, k);
  out_ += "\":";
  after_key_ = true;
  return *this;
}

json_writer& json_writer::value(std::string_view s) {
  separate();
  out_ += '"';
  append_json_escaped(out_, s);
  out_ += '"';
  return *this;
}

json_writer& json_writer::value(double d) {
  separate();
  append_json_number(out_, d);
  return *this;
}

json_writer& json_writer::value(std::int64_t i) {
  separate();
  std::array<char, 24> buf{};
  auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), i);
  out_.append(buf.data(), end);
  return *this;
}

json_writer& json_writer::value(std::uint64_t u) {
  separate();
  std::array<char, 24> buf{};
  auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), u);
  out_.append(buf.data(), end);
  return *this;
}

json_writer& json_writer::value(bool b) {
  separate();
  out_ += b ? "true" : "false";
  return *this;
}

json_writer& json_writer::null() {
  separate();
  out_ += "null";
  return *this;
}

json_writer& json_writer::raw(std::string_view json) {
  separate();
  out_ += json;
  return *this;
}

}  // namespace joules
