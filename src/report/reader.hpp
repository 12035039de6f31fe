#pragma once
// Reads joules' JSONL records (docs/jsonl-schema.md) from the text of files into runs and nodes
// (report/records.hpp), and says what it could not read, file and line: a line cut off by a
// crash, a line that is not JSON, a record of a type or schema version this joules does not
// know (a newer joules), a record without the fields it needs.  Those lines are skipped with a
// warning; what parsed is kept.  A file with no joules record at all is reported as such, so
// the caller can refuse it in one line.
//
// JSON is parsed with simdjson's DOM parser, one line at a time: a 24-hour run's records and a
// thousand run files are read in well under a second each (docs/benchmarks.md).
//
// Pure (no I/O: the caller reads the files).  Not thread-safe: one reader per thread.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "report/records.hpp"

namespace joules::report {

// What one file gave.
struct file_result {
  std::uint64_t lines = 0;    // non-blank lines
  std::uint64_t records = 0;  // joules records kept
  // Set when the file holds no joules record at all: empty, or not joules' JSONL (the first
  // line that is not a record, and why).
  std::optional<diagnostic> unusable;
};

// What to read: everything (report, diff), or what totals need (aggregate): no `sample`
// records, and `step` and `phase` records only for nodes whose session_end is missing (their
// windows are then their energy).  joules writes "type" first in every record, so a skipped line
// is told by its first bytes and never parsed: a thousand runs' files are mostly samples and
// steps.  A line in another key order is parsed as usual.
enum class read_scope { everything, totals };

class reader {
 public:
  // At most this many warnings are kept per file; the rest are counted in one more.
  static constexpr std::size_t kMaxWarningsPerFile = 20;

  explicit reader(read_scope scope = read_scope::everything);
  ~reader();
  reader(const reader&) = delete;
  reader& operator=(const reader&) = delete;

  // Reads every line of `text`, the contents of the file called `name` in messages.
  file_result add_file(std::string_view name, std::string_view text);

  // The runs read so far (windows in window order, samples in time order) and the warnings.
  record_set take();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

// Reads one text as one file: add_file() and take() in one call.
record_set read_text(std::string_view name, std::string_view text);

}  // namespace joules::report
