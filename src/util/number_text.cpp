#include "util/number_text.hpp"

#include <cmath>
#include <cstddef>

namespace joules {
namespace {

constexpr int kSignificantDigits = 15;
constexpr double kExactFrom = 1e14;

// Significant digits of a number as to_chars writes it ("-1.2345e-07" has 5).
int significant_digits(const char* first, const char* last) {
  int digits = 0;
  bool leading = true;
  for (const char* p = first; p != last && *p != 'e' && *p != 'E'; ++p) {
    if (*p < '0' || *p > '9') continue;
    if (leading && *p == '0') continue;
    leading = false;
    ++digits;
  }
  return digits;
}

}  // namespace

std::to_chars_result to_chars_clean(char* first, char* last, double value) {
  const std::to_chars_result shortest = std::to_chars(first, last, value);
  // From 1e14 on a double has no digit after the 15th worth dropping (its step is at least
  // 1/64), and rounding there would put a value before its smaller neighbour: such values stay
  // exact (2^63 is 9223372036854775808).  Below, rounding to 15 digits is monotonic.
  if (shortest.ec != std::errc() || std::fabs(value) >= kExactFrom ||
      significant_digits(first, shortest.ptr) <= kSignificantDigits)
    return shortest;
  return std::to_chars(first, last, value, std::chars_format::general, kSignificantDigits);
}

}  // namespace joules
