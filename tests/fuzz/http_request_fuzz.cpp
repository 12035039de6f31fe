// libFuzzer target for the HTTP request parser (src/http/http_request.cpp).  Besides crashes
// and sanitizer reports, it checks what the server relies on:
//   - a complete head lies inside the buffer and within the limit, its views point into it;
//     a served method's path starts with '/';
//   - feeding the same bytes in two pieces with `resume` gives the same answer as in one;
//   - an error status is one the server knows how to answer.
// Built and run by tests/fuzz/run (the `fuzz` test of the asan preset).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "fuzz/fuzz_input.hpp"
#include "http/http_request.hpp"

namespace {

using joules::exporter::http::parse_request;
using joules::exporter::http::parse_result;
using joules::exporter::http::parse_status;
using joules::exporter::http::parser_limits;

bool inside(std::string_view part, std::string_view whole) {
  return part.empty() ||
         (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

bool same(const parse_result& a, const parse_result& b) {
  return a.status == b.status && a.error_status == b.error_status && a.consumed == b.consumed &&
         a.head.method == b.head.method && a.head.target == b.head.target &&
         a.head.path == b.head.path && a.head.version_minor == b.head.version_minor &&
         a.head.keep_alive == b.head.keep_alive && a.head.accepts_gzip == b.head.accepts_gzip;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The first byte picks small limits now and then, so the limit paths are reached often.
  const parser_limits limits = size > 0 && data[0] < 64
                                   ? parser_limits{static_cast<std::size_t>(data[0]) + 1, 4}
                                   : parser_limits{};
  const std::string_view buf(reinterpret_cast<const char*>(data), size);
  const parse_result r = parse_request(buf, limits);
  switch (r.status) {
    case parse_status::complete:
      JOULES_FUZZ_CHECK(r.consumed > 0 && r.consumed <= buf.size() &&
                        r.consumed <= limits.max_head_bytes);
      JOULES_FUZZ_CHECK(inside(r.head.method, buf) && inside(r.head.target, buf));
      // An absolute-form target without a path ("http://host") gets a static "/".
      JOULES_FUZZ_CHECK(inside(r.head.path, buf) || r.head.path == "/");
      JOULES_FUZZ_CHECK(r.head.path.starts_with('/') || r.head.method == "OPTIONS" ||
                        r.head.method == "CONNECT");
      JOULES_FUZZ_CHECK(!r.head.method.empty() && !r.head.target.empty());
      JOULES_FUZZ_CHECK(r.head.version_minor <= 1);
      break;
    case parse_status::error:
      JOULES_FUZZ_CHECK(r.error_status == 400 || r.error_status == 413 || r.error_status == 414 ||
                        r.error_status == 431 || r.error_status == 505);
      break;
    case parse_status::incomplete:
      JOULES_FUZZ_CHECK(buf.size() < limits.max_head_bytes);
      break;
  }
  // Resuming after a prefix must not change the answer.
  if (size > 1) {
    const std::size_t cut = data[size - 1] % size;
    std::size_t resume = 0;
    const parse_result first = parse_request(buf.substr(0, cut), limits, &resume);
    JOULES_FUZZ_CHECK(resume <= cut);
    if (first.status == parse_status::incomplete) {
      JOULES_FUZZ_CHECK(same(parse_request(buf, limits, &resume), r));
    }
  }
  return 0;
}
