#pragma once
// Prometheus text exposition format 0.0.4, the letter of it:
// https://prometheus.io/docs/instrumenting/exposition_formats/#text-format-details
//
// Pure and locale-proof: numbers go through std::to_chars, never a stream, so a process running
// under de_DE.UTF-8 still writes "0.5" (prometheus-cpp tests its serializer the same way).
// Every function appends to `out`; none allocates beyond growing it.

#include <cstdint>
#include <string>
#include <string_view>

namespace joules::exporter {

class exposition;

// The Content-Type a server sends with this format.
inline constexpr std::string_view kTextFormatContentType =
    "text/plain; version=0.0.4; charset=utf-8";

// Appends every family of `e` that has samples, in registration order, each as
// `# HELP`, `# TYPE` and its samples, contiguous.  Families without samples are left out.
void write_text_format(const exposition& e, std::string& out);

// A label value between its quotes: `\` -> `\\`, `"` -> `\"`, newline -> `\n`.  Bytes that are
// not valid UTF-8 become U+FFFD, because the format is UTF-8 and one bad byte from a driver
// string would make Prometheus reject the whole scrape.
void append_label_value_escaped(std::string& out, std::string_view value);

// HELP text: `\` -> `\\`, newline -> `\n` (quotes stay as they are); invalid UTF-8 as above.
void append_help_escaped(std::string& out, std::string_view help);

// A sample value: `NaN`, `+Inf`, `-Inf`; integral values below 2^63 in magnitude as plain
// integers (so 1e15 J is "1000000000000000", not "1e+15"; -0 is "0"); anything else in the
// shortest form that reads back to the same double ("0.1", "1e-07", "1e+300"), rounded to 15
// significant digits when that is longer (no float noise: util/number_text.hpp).
void append_sample_value(std::string& out, double value);

// A timestamp in milliseconds since the Unix epoch.
void append_timestamp(std::string& out, std::int64_t ms);

}  // namespace joules::exporter
