#pragma once
// The CSV of data/ (RFC 4180: fields in double quotes may hold commas and "" for a quote).
// Pure logic.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace joules::carbon {

using csv_row = std::vector<std::string>;

// Every row of `text`; empty lines are skipped, and the first row too with `skip_header`.
std::vector<csv_row> parse_csv(std::string_view text, bool skip_header);

// A year column of the tables (1900 to 2100), or nothing when the field is empty or not one.
std::optional<int> parse_year(std::string_view field);

}  // namespace joules::carbon
