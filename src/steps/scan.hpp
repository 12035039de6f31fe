#pragma once
// Byte-level helpers for the step-line scanners.  Everything here is ASCII-only on purpose: log
// lines are UTF-8 with the occasional invalid byte, and a locale-aware isdigit()/tolower() would
// make the parser depend on the environment it runs in.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace joules::steps {

constexpr bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
constexpr bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
constexpr bool is_alnum(char c) {
  return is_digit(c) || is_alpha(c);
}
constexpr bool is_space(char c) {
  return c == ' ' || c == '\t';
}
constexpr char to_lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c;
}
// Nothing but blanks (or nothing at all).
constexpr bool blank(std::string_view s) {
  for (const char c : s) {
    if (!is_space(c)) return false;
  }
  return true;
}
constexpr bool contains(std::string_view s, std::string_view needle) {
  return s.find(needle) != std::string_view::npos;
}

// A cursor over one line.  All reads are bounds-checked: at the end, peek() returns '\0'.
class cursor {
 public:
  explicit cursor(std::string_view s, std::size_t pos = 0) : s_(s), pos_(pos) {}

  bool done() const { return pos_ >= s_.size(); }
  char peek(std::size_t ahead = 0) const {
    return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0';
  }
  std::size_t pos() const { return pos_; }
  void seek(std::size_t p) { pos_ = p < s_.size() ? p : s_.size(); }
  void advance(std::size_t n = 1) { seek(pos_ + n); }
  std::string_view rest() const { return s_.substr(pos_); }
  std::string_view line() const { return s_; }

  std::size_t skip_spaces() {
    const std::size_t from = pos_;
    while (is_space(peek()))
      ++pos_;
    return pos_ - from;
  }
  // Consumes `lit` (exact bytes) when it is next.
  bool eat(std::string_view lit) {
    if (s_.substr(pos_, lit.size()) != lit) return false;
    pos_ += lit.size();
    return true;
  }
  bool eat(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  // Consumes `lit` ignoring ASCII case.
  bool eat_ci(std::string_view lit);
  // A run of decimal digits as an integer; nullopt (nothing consumed) when there is none or it
  // overflows 64 bits.
  std::optional<std::uint64_t> uint();
  // `N` or `N/M` (spaces allowed around the slash, as Megatron pads both numbers).
  bool fraction(std::uint64_t& n, std::optional<std::uint64_t>& total);

 private:
  std::string_view s_;
  std::size_t pos_;
};

bool starts_with_ci(std::string_view s, std::string_view prefix);
// Position of `needle` in `s` ignoring ASCII case, or npos.
std::size_t find_ci(std::string_view s, std::string_view needle);
bool contains_ci(std::string_view s, std::string_view needle);

// A decimal number at the start of `s`: sign, digits with optional thousands separators
// ("10,050"), fraction, exponent.  Sets `len` to the bytes used.  Rejects clock times ("2:03"),
// dates and version-like strings ("1.2.3") so that those never read as metrics.
std::optional<double> leading_number(std::string_view s, std::size_t& len);

}  // namespace joules::steps
