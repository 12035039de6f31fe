#pragma once
// An exposition as an OTLP/HTTP metrics request in the JSON encoding, so that `--otlp` sends
// the same names and labels as /metrics without a protobuf dependency:
// https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding
// https://github.com/open-telemetry/opentelemetry-proto/blob/main/opentelemetry/proto/metrics/v1/metrics.proto
//
//   {"resourceMetrics":[{"resource":{"attributes":[...]},
//     "scopeMetrics":[{"scope":{"name":"joules","version":"..."},"metrics":[...]}]}]}
//
// A gauge (and an info, value 1) becomes a `gauge`; a counter a `sum` with isMonotonic true
// and cumulative temporality (aggregationTemporality 2: enums are integers in OTLP JSON), whose
// startTimeUnixNano is when the exporter started counting.  Labels become attributes; 64-bit
// integers (times, asInt) are strings, as proto3's JSON mapping writes them.  A family whose
// values are all whole numbers and whose name says it counts things (`_total` without a unit,
// `_info`, `_bytes`, `_steps`) uses asInt; every other point asDouble.  Non-finite values are
// left out: JSON has no NaN.  Pure.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "export/metrics/exposition.hpp"

namespace joules::exporter {

struct otlp_batch_info {
  // Resource attributes: service.name, host.name, joules.run_id, the user's labels.
  std::vector<std::pair<std::string, std::string>> resource;
  std::int64_t time_unix_nano = 0;
  std::int64_t start_unix_nano = 0;  // start of the cumulative sums
};

// The OTLP unit of a family from the unit in its name ("W", "J", "s", "By", ...), or "".
std::string_view otlp_unit(std::string_view family_name);

// Appends the request body for the families of `e` that have samples.
void write_otlp_json(const exposition& e, const otlp_batch_info& info, std::string& out);

// The labels of a sample back from their text (`a="x",b="y\"z"`), unescaped.
std::vector<std::pair<std::string, std::string>> parse_label_text(std::string_view text);

}  // namespace joules::exporter
