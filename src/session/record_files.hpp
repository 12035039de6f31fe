#pragma once
// The files `report`, `diff` and `aggregate` read and write: JSONL records read into runs with
// their warnings said on stderr (file and line, escaped), and outputs written whole or not at
// all (a temporary file in the same folder, renamed over the target: a report that fails half
// way never replaces a good one).
//
// Not thread-safe; used on the main thread.

#include <string>
#include <string_view>
#include <vector>

#include "report/reader.hpp"
#include "report/records.hpp"

namespace joules::session {

struct read_options {
  // Empty files are skipped with a warning (a run killed before its first record) instead of
  // being refused; files that are not joules' JSONL are always refused.
  bool skip_empty = false;
  bool quiet = false;  // no warnings on stderr (they stay in the record set)
  report::read_scope scope = report::read_scope::everything;
};

// Reads `files` ("-" is standard input).  Throws usage_error, in one line naming the file (and
// line), for a file that cannot be read, is not joules' JSONL, or is empty (unless skip_empty),
// and when no file holds a record.
report::record_set read_records(const std::vector<std::string>& files, const read_options& o);

// Writes `contents` to `path` ("-": standard output) through a temporary file renamed over it.
// Throws fatal_error naming the file and why.
void write_whole(const std::string& path, std::string_view contents);

// Throws usage_error when `path` cannot be written (its folder is missing or not writable), so
// that bad input is said before any work.
void check_writable(const std::string& path, std::string_view option);

}  // namespace joules::session
