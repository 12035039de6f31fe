#include "report/reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "report/reader_impl.hpp"

namespace joules::report {
namespace {

// The schema version this joules writes and reads (docs/jsonl-schema.md).
constexpr std::int64_t kSchemaVersion = 1;
// Lines longer than this are not records joules writes (its longest, a step of a thousand GPUs,
// is under 200 kB): refused without parsing.
constexpr std::size_t kMaxLineBytes = 16 * 1024 * 1024;
// How much of a bad line a message quotes.
constexpr std::size_t kQuoteBytes = 40;

std::string quote(std::string_view line) {
  std::string q(line.substr(0, kQuoteBytes));
  return line.size() > kQuoteBytes ? q + "..." : q;
}

}  // namespace

void reader::impl::end_file() {
  for (const auto& [type, at] : unknown) {
    warn(at.first, fmt::format("record type '{}' is unknown to this joules (written by a newer "
                               "one?); {} such record(s) skipped",
                               type, at.second));
  }
  if (newer_version) {
    warn(newer_line, fmt::format("records of schema version {} (this joules reads version {}): "
                                 "read as version {} where their fields agree",
                                 *newer_version, kSchemaVersion, kSchemaVersion));
  }
  if (file_warnings > kMaxWarningsPerFile) {
    out.warnings.push_back(
        {file, 0,
         fmt::format("{} more warning(s) not shown", file_warnings - kMaxWarningsPerFile)});
  }
  unknown.clear();
  newer_version.reset();
}

reader::reader(read_scope scope) : impl_(std::make_unique<impl>()) {
  impl_->scope = scope;
}
reader::~reader() = default;

file_result reader::add_file(std::string_view name, std::string_view text) {
  impl& m = *impl_;
  m.file = std::string(name);
  m.file_warnings = 0;
  file_result result;
  std::optional<diagnostic> first_bad;
  std::uint64_t line_no = 0;
  std::size_t pos = 0;
  const bool totals = m.scope == read_scope::totals;
  struct deferred_line {
    std::string_view text;
    std::uint64_t line_no;
  };
  std::vector<deferred_line> deferred;  // totals: windows, read only for nodes without an end
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    const bool terminated = nl != std::string_view::npos;
    if (!terminated) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    ++result.lines;
    if (totals && terminated) {
      if (line.starts_with(R"({"type":"sample",)")) {
        ++result.records;
        continue;
      }
      if (line.starts_with(R"({"type":"step",)") || line.starts_with(R"({"type":"phase",)")) {
        deferred.push_back({line, line_no});
        ++result.records;
        continue;
      }
    }
    auto bad = [&](std::string why) {
      if (!first_bad) first_bad = diagnostic{m.file, line_no, why};
      m.warn(line_no, std::move(why));
    };
    element doc;
    const auto err = line.size() > kMaxLineBytes
                         ? simdjson::CAPACITY
                         : m.parser.parse(line.data(), line.size(), true).get(doc);
    if (err != simdjson::SUCCESS) {
      if (!terminated && result.records > 0) {
        bad("the last line is cut off (joules was killed while writing it?); the records before "
            "it are read");
      } else {
        bad(fmt::format("not a JSON record ({}): '{}'", simdjson::error_message(err), quote(line)));
      }
      continue;
    }
    object o;
    std::string_view type;
    std::int64_t version = 0;
    if (doc.get_object().get(o) != simdjson::SUCCESS ||
        o["type"].get_string().get(type) != simdjson::SUCCESS ||
        o["schema_version"].get_int64().get(version) != simdjson::SUCCESS) {
      bad(fmt::format("JSON, but not a joules record (no type and schema_version): '{}'",
                      quote(line)));
      continue;
    }
    if (version > kSchemaVersion && !m.newer_version) {
      m.newer_version = version;
      m.newer_line = line_no;
    }
    if (!m.add_record(type, o, line_no)) {
      m.warn(line_no, fmt::format("{} record without the fields it needs; skipped", type));
      continue;
    }
    ++result.records;
  }
  // Windows are the energy of a node cut off before its session_end.
  const bool cut_off = std::any_of(m.out.runs.begin(), m.out.runs.end(), [&](const run& r) {
    return std::any_of(r.nodes.begin(), r.nodes.end(), [&](const node& n) {
      return !n.has_end && std::find(n.files.begin(), n.files.end(), m.file) != n.files.end();
    });
  });
  for (const auto& d : deferred) {
    if (!cut_off) break;
    element doc;
    object o;
    std::string_view type;
    if (m.parser.parse(d.text.data(), d.text.size(), true).get(doc) != simdjson::SUCCESS ||
        doc.get_object().get(o) != simdjson::SUCCESS ||
        o["type"].get_string().get(type) != simdjson::SUCCESS ||
        !m.add_record(type, o, d.line_no)) {
      m.warn(d.line_no, "a step or phase record that cannot be read; skipped");
    }
  }
  if (result.records == 0) {
    result.unusable = result.lines == 0
                          ? diagnostic{m.file, 0, "the file is empty: it holds no records"}
                          : first_bad.value_or(diagnostic{m.file, 0, "no joules records"});
  }
  m.out.records += result.records;
  m.end_file();
  return result;
}

record_set reader::take() {
  record_set out = std::move(impl_->out);
  for (auto& r : out.runs) {
    for (auto& n : r.nodes) {
      std::stable_sort(n.windows.begin(), n.windows.end(),
                       [](const auto& a, const auto& b) { return a.window < b.window; });
      std::stable_sort(n.samples.begin(), n.samples.end(),
                       [](const auto& a, const auto& b) { return a.start_s < b.start_s; });
    }
  }
  impl_->out = {};
  impl_->nodes.clear();
  impl_->runs.clear();
  return out;
}

record_set read_text(std::string_view name, std::string_view text) {
  reader r;
  r.add_file(name, text);
  return r.take();
}

}  // namespace joules::report
