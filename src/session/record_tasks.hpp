#pragma once
// `joules report`, `joules diff` and `joules aggregate`: read records (session/record_files.hpp),
// compute (report/), render (render/) and write, each in one call.  Bad input (a file that is not
// joules' JSONL, an output that cannot be written, --pdf without Chromium) throws usage_error
// before anything is written.
//
// Not thread-safe; used on the main thread.

#include <optional>
#include <string>
#include <vector>

#include "report/aggregate.hpp"

namespace joules::session {

struct report_settings {
  std::vector<std::string> files;
  std::optional<std::string> output;  // the HTML; default: the first file's name, .html
  std::optional<std::string> pdf;
  bool quiet = false;
};
int report(const report_settings& s);

struct diff_settings {
  std::vector<std::string> files;  // exactly two: A and B
  std::optional<double> fail_if_worse_percent;
  bool json = false;
  bool quiet = false;
};
// 0, or 1 when --fail-if-worse's limit was passed.
int diff(const diff_settings& s);

enum class table_format { table, csv, json };
struct aggregate_settings {
  std::vector<std::string> files;
  std::vector<report::group_key> by;
  table_format format = table_format::table;
  bool quiet = false;
};
int aggregate(const aggregate_settings& s);

// "host,day" into group keys; throws usage_error naming the value and what is accepted.
std::vector<report::group_key> parse_group_keys(const std::string& value);

}  // namespace joules::session
