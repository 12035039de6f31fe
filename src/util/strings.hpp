#pragma once
// Small string helpers shared by the parsers.  Pure, allocation only where a vector is returned.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace joules {

// `text` broken into lines of at most `width` columns at its spaces: the first line goes on from
// column `first` (what precedes it on its line), the others start after `indent` spaces.  A
// number and the unit after it ("354 W", "0.00793 J/token") are never parted, and a word longer
// than a line stays whole.  Columns are code points: for text without wide characters or colour.
std::string wrap_words(std::string_view text, std::size_t first, std::size_t indent,
                       std::size_t width);

// Splits on `sep`; "a,,b" gives {"a", "", "b"} and "" gives {""}.
std::vector<std::string> split(std::string_view s, char sep);

// Without leading and trailing ASCII whitespace.
std::string_view trim(std::string_view s);

// A whole decimal integer in [lo, hi], or nullopt (no sign, no spaces, no trailing text).
std::optional<std::uint64_t> parse_uint(std::string_view s, std::uint64_t lo, std::uint64_t hi);

// A whole decimal number (C locale), or nullopt.
std::optional<double> parse_double(std::string_view s);

// Joules with a precision that fits their size, for people: 778168 J, 412.3 J, 0.0412 J.
std::string format_joules(double j);

}  // namespace joules
