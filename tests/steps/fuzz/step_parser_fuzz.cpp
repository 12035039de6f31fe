// libFuzzer target for the step parser: the input is a log, fed line by line to one parser (so
// that state across lines is exercised), with every line also parsed alone and its metrics
// checked for names and finite values.  A parser without the prefilter reads the same lines: any
// difference between the two is a crash (the prefilter must change no result).  Built by run.sh,
// not by the default build.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "steps/step_parser.hpp"

namespace {

void check(const joules::steps::parsed_line& p) {
  for (const auto& m : p.metrics) {
    if (m.name.empty() || !std::isfinite(m.value)) std::abort();
  }
  if (p.kind != joules::steps::line_kind::step && p.step_gap != 0) std::abort();
  if ((p.kind == joules::steps::line_kind::phase_begin ||
       p.kind == joules::steps::line_kind::phase_end) &&
      p.phase.empty()) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  static joules::steps::step_parser custom({R"(^it (\d+) of (?<total>\d+))"});
  joules::steps::step_parser stream;
  joules::steps::step_parser reference({}, /*prefilter=*/false);
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    const auto got = stream.parse(line);
    check(got);
    if (got != reference.parse(line)) std::abort();
    check(custom.parse(line));
    start = end + 1;
  }
  return 0;
}
