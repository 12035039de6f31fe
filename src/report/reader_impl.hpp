#pragma once
// The reader's state (report/reader.hpp), shared by reader.cpp (lines, files, diagnostics) and
// reader_records.cpp (what each record type gives).  Internal to report/.

#include <simdjson.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "report/reader.hpp"

namespace joules::report {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

struct reader::impl {
  read_scope scope = read_scope::everything;
  simdjson::dom::parser parser;
  record_set out;
  std::map<std::pair<std::string, std::string>, std::pair<std::size_t, std::size_t>> nodes;
  std::map<std::string, std::size_t> runs;

  // Per file.
  std::string file;
  std::size_t file_warnings = 0;
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> unknown;  // type: line, count
  std::optional<std::int64_t> newer_version;
  std::uint64_t newer_line = 0;

  void warn(std::uint64_t line, std::string message) {
    if (++file_warnings > kMaxWarningsPerFile) return;
    out.warnings.push_back({file, line, std::move(message)});
  }

  node& node_of(const object& o);

  // Returns false when a record of a known type lacks what it needs.
  bool add_record(std::string_view type, const object& o, std::uint64_t line);
  void read_start(const object& o, node& n);
  void read_end(const object& o, node& n);
  bool read_window(const object& o, node& n, bool step);
  bool read_sample(const object& o, node& n);
  void end_file();
};

}  // namespace joules::report
