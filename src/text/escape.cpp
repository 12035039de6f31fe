#include "text/escape.hpp"

#include <fmt/format.h>

#include "text/utf8.hpp"

namespace joules::text {
namespace {

// Length of the safe character at s[i] (printable ASCII, or a valid UTF-8 sequence that is not
// a C1 control, U+0080..U+009F), or 0 when it must be escaped.
std::size_t safe_length(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return c >= 0x20 && c != 0x7F ? 1 : 0;
  const std::size_t n = utf8_sequence_length(s, i);
  // U+0080..U+009F are encoded C2 80..C2 9F.
  if (n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0) return 0;
  return n;
}

}  // namespace

bool is_terminal_safe(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = safe_length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string escape_for_terminal(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    if (const std::size_t n = safe_length(s, i); n != 0) {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == 0xC2 && i + 1 < s.size() && utf8_sequence_length(s, i) == 2) {
      // A C1 control: shown by its code point's byte.
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(s[i + 1]));
      i += 2;
      continue;
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
    ++i;
  }
  return out;
}

std::string escape_for_html(std::string_view s) {
  const std::string shown = is_terminal_safe(s) ? std::string(s) : escape_for_terminal(s);
  std::string out;
  out.reserve(shown.size());
  for (const char c : shown) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace joules::text
