#pragma once
// Numbers as text for machines (JSONL, /metrics, OTLP): locale-proof (std::to_chars), and
// without float noise.  A value computed from measurements carries the rounding of its
// arithmetic (0.1 + 0.2 is 0.30000000000000004; 13.86 ms in seconds is 0.013859999999999999):
// the 16th and 17th significant digits say nothing about the measurement, which no instrument
// knows to 15 digits.  So a double is written in its shortest round-trip form when that has at
// most 15 significant digits (or the value is 1e14 or more), and rounded to 15 otherwise: "0.3",
// "0.01386".  Rounding is monotonic, so a counter written this way never appears to go down.
// Pure.

#include <charconv>

namespace joules {

// Writes `value` (finite) into [first, last); as std::to_chars.
std::to_chars_result to_chars_clean(char* first, char* last, double value);

}  // namespace joules
