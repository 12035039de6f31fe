#pragma once
// A reader of the Prometheus text exposition format 0.0.4, for the /metrics pages of inference
// servers (https://prometheus.io/docs/instrumenting/exposition_formats/#text-format-details).
//
// Pure logic, no I/O, one pass over the page: every line is checked (a page that is not
// Prometheus text is refused with the number of its first bad line), and the caller sees each
// sample as views into the page, deciding from its name alone whether to decode its labels.  A
// 200 kB vLLM page is read without allocating (docs/benchmarks.md, "Token sources").
//
// What it accepts, as Prometheus' own parser does: `# HELP` and `# TYPE` lines (any other `#`
// line is a comment), blank lines, samples `name{label="value",...} value [timestamp]` with
// blanks or tabs between tokens, a trailing comma in the braces, label values escaped with
// `\\`, `\"` and `\n` (any other escape is an error), values as Go's ParseFloat reads them in
// decimal (`1`, `-2.5e3`, `NaN`, `+Inf`, `-Inf`), timestamps in integer milliseconds.  The
// OpenMetrics page end `# EOF` ends the page; an exemplar (` # {...} v`) after a sample is
// skipped.  Numbers are read with std::from_chars: the process locale plays no part.
//
// Bounded: kMaxPageBytes is the largest page read at all; the scraper stops downloading beyond
// it.
//
// Thread-safety: none needed (pure functions).

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace joules::tokens {

// The largest /metrics page joules reads (vLLM's is ~200 kB with one model; 16 MiB leaves room
// for hundreds of LoRA adapters' series without letting a wrong URL fill memory).
inline constexpr std::size_t kMaxPageBytes = std::size_t{16} << 20U;

// One sample as it stands in the page.  `labels` is the text between the braces (escapes not
// yet resolved; empty without braces), checked already: decode_labels() cannot fail on it.
struct sample_view {
  std::string_view name;
  std::string_view labels;
  double value = 0.0;
};

using label_pairs = std::vector<std::pair<std::string, std::string>>;

// The first thing wrong with a page: its line (1-based) and what was expected there.
struct parse_error {
  std::size_t line = 0;
  std::string what;
};

// Reads `page`, calling `on_sample` for each sample in order.  Returns the first error, or
// nullopt for a page that is Prometheus text (samples before the error have been seen).
std::optional<parse_error> parse_text_format(
    std::string_view page, const std::function<void(const sample_view&)>& on_sample);

// The labels of a sample_view (name, unescaped value), in page order.
label_pairs decode_labels(std::string_view labels);

// A label matcher list as a user writes it after a metric name: `{a="b",c="d"}` (the braces
// included, escapes as in the text format).  nullopt when it is not one.
std::optional<label_pairs> parse_label_matchers(std::string_view text);

// `[a-zA-Z_:][a-zA-Z0-9_:]*`
bool is_metric_name(std::string_view s);

}  // namespace joules::tokens
