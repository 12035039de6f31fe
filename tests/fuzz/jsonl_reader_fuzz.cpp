// libFuzzer target for the JSONL record reader (src/report/reader.*) and everything downstream
// of it: the input is one or more record files, cut at each 0x00 byte; every run read is
// summarised, drawn as the HTML report, compared with itself (diff) and aggregated.  Nothing may
// crash or hang, every warning must name a line of its file, a file with records must not be
// called unusable, and the page must be whole.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_input.hpp"
#include "render/report_html.hpp"
#include "render/tables.hpp"
#include "report/aggregate.hpp"
#include "report/diff.hpp"
#include "report/reader.hpp"
#include "report/summary.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace joules;
  const auto files = fuzz::fields(fuzz::as_text(data, size), '\0');
  report::reader reader;
  std::vector<std::uint64_t> lines;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto r = reader.add_file("f" + std::to_string(i), files[i]);
    JOULES_FUZZ_CHECK(r.records <= r.lines);
    JOULES_FUZZ_CHECK(r.unusable.has_value() == (r.records == 0));
    lines.push_back(static_cast<std::uint64_t>(std::count(files[i].begin(), files[i].end(), '\n')) +
                    1);
  }
  const report::record_set set = reader.take();
  for (const auto& w : set.warnings) {
    const std::size_t file = std::stoul(w.file.substr(1));
    JOULES_FUZZ_CHECK(file < lines.size() && w.line <= lines[file]);
  }
  std::vector<report::run_summary> summaries;
  for (const auto& r : set.runs) {
    summaries.push_back(report::summarize(r));
    const auto& s = summaries.back();
    JOULES_FUZZ_CHECK(s.hosts.size() == r.nodes.size());
  }
  const std::string page = render::report_page(set, "joules fuzz");
  JOULES_FUZZ_CHECK(page.ends_with("</html>\n"));
  if (!summaries.empty()) {
    const auto d = report::compare(summaries, summaries);
    render::diff_side a{"a", summaries};
    (void)render::diff_text(a, a, d, std::nullopt);
    (void)render::diff_json(a, a, d, render::diff_gate{5.0, false});
  }
  const auto agg = report::aggregate(set, {report::group_key::host, report::group_key::job,
                                           report::group_key::day, report::group_key::user});
  (void)render::aggregate_text(agg);
  (void)render::aggregate_csv(agg);
  (void)render::aggregate_json(agg);
  return 0;
}
