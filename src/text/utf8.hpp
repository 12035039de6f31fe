#pragma once
// UTF-8 validation, the one place joules decides what valid UTF-8 is (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF).  Outside strings — log lines, process names,
// labels, GPU names — are checked here before they reach JSON, Prometheus text or a terminal.
// Pure.

#include <cstddef>
#include <string_view>

namespace joules::text {

// U+FFFD, what an invalid byte becomes where the output must be valid UTF-8.
inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

// Length of the valid UTF-8 sequence starting at s[i] (a byte >= 0x80), or 0 when it is not
// valid.
std::size_t utf8_sequence_length(std::string_view s, std::size_t i);

bool is_valid_utf8(std::string_view s);

}  // namespace joules::text
