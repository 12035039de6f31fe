#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

namespace joules {

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.emplace_back(s.substr(start));
      return out;
    }
    out.emplace_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

std::string_view trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\n\f\v";
  const auto b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(kSpace);
  return s.substr(b, e - b + 1);
}

std::optional<std::uint64_t> parse_uint(std::string_view s, std::uint64_t lo, std::uint64_t hi) {
  std::uint64_t v = 0;
  if (s.empty()) return std::nullopt;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < lo || v > hi) return std::nullopt;
  return v;
}

std::optional<double> parse_double(std::string_view s) {
  double v = 0.0;
  if (s.empty()) return std::nullopt;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string format_joules(double j) {
  const double a = std::abs(j);
  if (a >= 1000.0) return fmt::format("{:.0f} J", j);
  if (a >= 10.0) return fmt::format("{:.1f} J", j);
  if (a >= 0.1) return fmt::format("{:.2f} J", j);
  return fmt::format("{:.3g} J", j);
}

namespace {

std::size_t code_points(std::string_view s) {
  std::size_t n = 0;
  for (const char c : s)
    n += (static_cast<unsigned char>(c) & 0xC0U) != 0x80U ? 1U : 0U;
  return n;
}

// A number's unit ("J/token", "W,", "g", "%", "°C"): the word after a number that a line must not
// part from it, or "0.00793" ends one line and "J/token" starts the next.
bool is_unit(std::string_view word) {
  constexpr std::size_t kLongestUnit = 8;  // "J/token,"
  if (word.empty() || word.size() > kLongestUnit) return false;
  const auto c = static_cast<unsigned char>(word[0]);
  return std::isalpha(c) != 0 || c == '%' || c >= 0x80;
}

}  // namespace

std::string wrap_words(std::string_view text, std::size_t first, std::size_t indent,
                       std::size_t width) {
  // The words, a number with its unit and with a short word before it ("in 0.20 ms",
  // "GPU 3:", "avg 2685 W") as one.
  std::vector<std::string> words;
  std::string last;  // the last word as it was in `text`
  for (auto& word : split(text, ' ')) {
    if (word.empty()) continue;
    const bool after_number =
        !last.empty() && std::isdigit(static_cast<unsigned char>(last.back())) != 0;
    const bool number = std::isdigit(static_cast<unsigned char>(word.front())) != 0;
    const bool short_word =
        !last.empty() && last.size() <= 3 && std::all_of(last.begin(), last.end(), [](char c) {
          return std::isalpha(static_cast<unsigned char>(c)) != 0;
        });
    if (!words.empty() && ((after_number && is_unit(word)) || (number && short_word))) {
      words.back() += ' ' + word;
    } else {
      words.push_back(word);
    }
    last = std::move(word);
  }
  std::string out;
  std::size_t col = first;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::size_t w = code_points(words[i]);
    if (i > 0 && col + 1 + w > width) {
      out += '\n';
      out.append(indent, ' ');
      col = indent;
    } else if (i > 0) {
      out += ' ';
      ++col;
    }
    out += words[i];
    col += w;
  }
  return out;
}

}  // namespace joules
