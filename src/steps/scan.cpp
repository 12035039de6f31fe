#include "steps/scan.hpp"

#include <array>
#include <charconv>
#include <limits>

namespace joules::steps {

bool cursor::eat_ci(std::string_view lit) {
  if (!starts_with_ci(rest(), lit)) return false;
  pos_ += lit.size();
  return true;
}

std::optional<std::uint64_t> cursor::uint() {
  std::uint64_t v = 0;
  std::size_t p = pos_;
  while (p < s_.size() && is_digit(s_[p])) {
    const auto d = static_cast<std::uint64_t>(s_[p] - '0');
    if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return std::nullopt;
    v = v * 10 + d;
    ++p;
  }
  if (p == pos_) return std::nullopt;
  pos_ = p;
  return v;
}

bool cursor::fraction(std::uint64_t& n, std::optional<std::uint64_t>& total) {
  const auto a = uint();
  if (!a) return false;
  n = *a;
  total.reset();
  const std::size_t after = pos_;
  skip_spaces();
  if (eat('/')) {
    skip_spaces();
    if (const auto b = uint()) {
      total = *b;
      return true;
    }
  }
  pos_ = after;
  return true;
}

bool starts_with_ci(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (to_lower(s[i]) != to_lower(prefix[i])) return false;
  }
  return true;
}

std::size_t find_ci(std::string_view s, std::string_view needle) {
  if (needle.empty()) return 0;
  if (s.size() < needle.size()) return std::string_view::npos;
  const char first = to_lower(needle[0]);
  for (std::size_t i = 0; i + needle.size() <= s.size(); ++i) {
    if (to_lower(s[i]) == first && starts_with_ci(s.substr(i), needle)) return i;
  }
  return std::string_view::npos;
}

bool contains_ci(std::string_view s, std::string_view needle) {
  return find_ci(s, needle) != std::string_view::npos;
}

namespace {

// Plain decimals ("-2.3456", "409", "0.0123") without from_chars: a mantissa of at most 15 digits
// and its power of ten are both exact doubles, so their quotient is correctly rounded (Clinger's
// fast path), the same value from_chars gives.  nullopt for anything else.
std::optional<double> exact_decimal(std::string_view d) {
  static constexpr std::array<double, 16> kPow10 = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                                    1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
  std::size_t i = 0;
  const bool negative = !d.empty() && d[0] == '-';
  if (negative) i = 1;
  std::uint64_t mantissa = 0;
  int digits = 0;
  int fraction = -1;  // digits after the point, once one is seen
  for (; i < d.size(); ++i) {
    const char c = d[i];
    if (is_digit(c)) {
      if (++digits > 15) return std::nullopt;
      mantissa = mantissa * 10 + static_cast<std::uint64_t>(c - '0');
      if (fraction >= 0) ++fraction;
    } else if (c == '.' && fraction < 0) {
      fraction = 0;
    } else {
      return std::nullopt;  // an exponent: from_chars
    }
  }
  if (digits == 0) return std::nullopt;
  const double v =
      static_cast<double>(mantissa) / kPow10[static_cast<std::size_t>(fraction < 0 ? 0 : fraction)];
  return negative ? -v : v;
}

}  // namespace

std::optional<double> leading_number(std::string_view s, std::size_t& len) {
  // Copy the number without thousands separators into a small buffer for from_chars.
  std::array<char, 64> buf{};
  std::size_t n = 0;
  std::size_t i = 0;
  auto put = [&](char c) {
    if (n < buf.size()) buf[n++] = c;
  };
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) {
    if (s[i] == '-') put('-');
    ++i;
  }
  const std::size_t int_start = i;
  while (i < s.size() && is_digit(s[i]))
    put(s[i++]);
  std::size_t int_digits = i - int_start;
  // Thousands separators: 1-3 digits, then groups of ",ddd" not followed by another digit.
  if (int_digits >= 1 && int_digits <= 3) {
    while (i + 3 < s.size() && s[i] == ',' && is_digit(s[i + 1]) && is_digit(s[i + 2]) &&
           is_digit(s[i + 3]) && (i + 4 >= s.size() || !is_digit(s[i + 4]))) {
      put(s[i + 1]);
      put(s[i + 2]);
      put(s[i + 3]);
      i += 4;
      int_digits += 3;
    }
  }
  bool frac = false;
  if (i < s.size() && s[i] == '.' && i + 1 < s.size() && is_digit(s[i + 1])) {
    frac = true;
    put(s[i++]);
    while (i < s.size() && is_digit(s[i]))
      put(s[i++]);
  }
  if (int_digits == 0 && !frac) return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    std::size_t j = i + 1;
    if (j < s.size() && (s[j] == '-' || s[j] == '+')) ++j;
    if (j < s.size() && is_digit(s[j])) {
      put('e');
      if (s[i + 1] == '-') put('-');
      i = j;
      while (i < s.size() && is_digit(s[i]))
        put(s[i++]);
    }
  }
  // Not a quantity: a clock time (2:03:04), a date (2024-01-02, 01/02), a version (1.2.3).
  if (i + 1 < s.size() && is_digit(s[i + 1]) &&
      (s[i] == ':' || s[i] == '/' || s[i] == '.' || (s[i] == '-' && !frac))) {
    return std::nullopt;
  }
  double v = 0.0;
  if (const auto fast = exact_decimal(std::string_view(buf.data(), n < buf.size() ? n : 0))) {
    v = *fast;
  } else if (n == i && (s.empty() || s[0] != '+')) {
    // No separators or '+' were dropped: parse the text in place.
    const auto r = std::from_chars(s.data(), s.data() + i, v);
    if (r.ec != std::errc{} || r.ptr != s.data() + i) return std::nullopt;
  } else {
    if (n >= buf.size()) return std::nullopt;
    const auto r = std::from_chars(buf.data(), buf.data() + n, v);
    if (r.ec != std::errc{} || r.ptr != buf.data() + n) return std::nullopt;
  }
  len = i;
  return v;
}

}  // namespace joules::steps
