// libFuzzer target for the addresses joules takes (src/export): --listen / --prometheus
// [HOST:]PORT and --otlp http[s]://HOST[:PORT][/PATH].  Bad input must be a usage_error; a parsed
// address is printable and, for a listen address, parses again to the same.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_input.hpp"
#include "http/http_client.hpp"
#include "http/listen_address.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace joules;
  const std::string text(fuzz::as_text(data, size));
  try {
    const exporter::listen_address a = exporter::parse_listen_address(text);
    JOULES_FUZZ_CHECK(!a.host.empty());
    const exporter::listen_address again = exporter::parse_listen_address(a.text());
    JOULES_FUZZ_CHECK(again.host == a.host && again.port == a.port);
  } catch (const usage_error&) {
  }
  try {
    const exporter::http_url u = exporter::parse_http_url(text, "--otlp");
    JOULES_FUZZ_CHECK(!u.host.empty() && u.path.starts_with('/'));
    JOULES_FUZZ_CHECK(!u.authority().empty());
  } catch (const usage_error&) {
  }
  return 0;
}
