// libFuzzer target for what token sources read from outside (src/tokens): an inference server's
// /metrics page (the Prometheus text parser, server recognition, counter deltas), a
// --tokens-metric selector (the input's first line) and a server's log lines.  Checked: a page
// either parses or names its first bad line; every sample it gives has a valid name and labels
// that decode; a sample written back in the text format reads back the same; a page read twice
// gives no increase; a log line gives finite, non-negative counts.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_input.hpp"
#include "tokens/counter_deltas.hpp"
#include "tokens/log_lines.hpp"
#include "tokens/server_page.hpp"
#include "tokens/text_parser.hpp"
#include "util/error.hpp"

namespace {

using namespace joules::tokens;

std::string escaped(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"' || c == '\n') out += '\\';
    out += c == '\n' ? 'n' : c;
  }
  return out;
}

void check_sample(const sample_view& v) {
  JOULES_FUZZ_CHECK(is_metric_name(v.name));
  const label_pairs labels = decode_labels(v.labels);
  std::string line(v.name);
  line += '{';
  for (const auto& [k, value] : labels) {
    JOULES_FUZZ_CHECK(!k.empty());
    line += k + "=\"" + escaped(value) + "\",";
  }
  line += "} 1\n";
  std::size_t again = 0;
  const auto e = parse_text_format(line, [&](const sample_view& w) {
    ++again;
    JOULES_FUZZ_CHECK(w.name == v.name);
    JOULES_FUZZ_CHECK(decode_labels(w.labels) == labels);
  });
  JOULES_FUZZ_CHECK(!e && again == 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = joules::fuzz::as_text(data, size);
  const auto error = parse_text_format(text, check_sample);
  if (error) JOULES_FUZZ_CHECK(error->line >= 1 && !error->what.empty());

  const auto p = read_page(text, {});
  JOULES_FUZZ_CHECK(p.reading.has_value() != !p.error.empty());
  if (p.reading) {
    counter_deltas d;
    JOULES_FUZZ_CHECK(!d.update(*p.reading));
    const auto same = d.update(*p.reading);
    JOULES_FUZZ_CHECK(same && same->resets == 0);
    for (double c : same->count)
      JOULES_FUZZ_CHECK(c == 0.0);
  }

  const auto lines = joules::fuzz::fields(text, '\n');
  try {
    const metric_selector s = parse_metric_selector(lines.front());
    JOULES_FUZZ_CHECK(is_metric_name(s.name));
    const auto custom = read_page(text, {s});
    JOULES_FUZZ_CHECK(custom.reading.has_value() != !custom.error.empty());
  } catch (const joules::usage_error&) {
    // A selector that is not one is refused with a message, as --tokens-metric must.
  }
  for (const auto& line : lines) {
    if (const auto t = parse_log_line(line)) {
      JOULES_FUZZ_CHECK(std::isfinite(t->input) && t->input >= 0);
      JOULES_FUZZ_CHECK(std::isfinite(t->output) && t->output >= 0);
      JOULES_FUZZ_CHECK(std::isfinite(t->requests) && t->requests >= 0);
    }
  }
  return 0;
}
