#pragma once
// What `joules diff` and `joules aggregate` print: aligned text tables for people, CSV and JSON
// for programs.  Numbers are locale-proof (fmt, json_writer); outside strings (hostnames, run
// ids, GPU names) are escaped for the terminal in text, and kept exact in CSV (quoted as
// RFC 4180 says) and JSON.  Pure.

#include <optional>
#include <string>
#include <vector>

#include "report/aggregate.hpp"
#include "report/diff.hpp"
#include "report/summary.hpp"

namespace joules::render {

// A side of a diff as its header names it: the file and its runs.
struct diff_side {
  std::string file;
  std::vector<report::run_summary> runs;
};

// The gate of --fail-if-worse, when given: the limit in percent and whether it failed.
struct diff_gate {
  double limit_percent = 0.0;
  bool failed = false;
};

std::string diff_text(const diff_side& a, const diff_side& b, const report::diff_result& d,
                      const std::optional<diff_gate>& gate);
std::string diff_json(const diff_side& a, const diff_side& b, const report::diff_result& d,
                      const std::optional<diff_gate>& gate);

std::string aggregate_text(const report::aggregate_result& r);
std::string aggregate_csv(const report::aggregate_result& r);
std::string aggregate_json(const report::aggregate_result& r);

}  // namespace joules::render
