// libFuzzer target for the web configuration parser of `serve --web-config-file`
// (src/http/web_config.cpp, YAML through libyaml) and the Basic credentials decoder
// (src/http/basic_auth.cpp).  Besides crashes and sanitizer reports, it checks what the server
// relies on:
//   - a bad file is a usage_error, never another exception;
//   - TLS on means a certificate and a key are both given, one way each;
//   - every user has a bcrypt hash and a name without ':'; every header value is one line;
//   - decoded credentials are a user without ':' and a password.
// Built and run by tests/fuzz/run (the `fuzz` test of the asan preset).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_input.hpp"
#include "http/basic_auth.hpp"
#include "http/web_config.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace joules::exporter;
  const std::string_view text = joules::fuzz::as_text(data, size);
  try {
    const web_config c = parse_web_config(text, "/etc/joules/web.yml");
    if (c.tls) {
      const tls_settings& t = c.tls_server;
      JOULES_FUZZ_CHECK(t.cert.given() && t.key.given());
      JOULES_FUZZ_CHECK(t.cert.text.empty() || t.cert.file.empty());
      JOULES_FUZZ_CHECK(t.key.text.empty() || t.key.file.empty());
      JOULES_FUZZ_CHECK(t.min_version >= 0x0301 && t.min_version <= t.max_version &&
                        t.max_version <= 0x0304);
    }
    for (const auto& [user, hash] : c.users) {
      JOULES_FUZZ_CHECK(!user.empty() && user.find(':') == std::string::npos);
      JOULES_FUZZ_CHECK(is_bcrypt_hash(hash));
    }
    for (const auto& [name, value] : c.headers)
      JOULES_FUZZ_CHECK(!value.empty() && value.find_first_of("\r\n") == std::string::npos);
  } catch (const joules::usage_error&) {
    // A bad file: one line for the user.
  }
  if (const auto creds = decode_basic_credentials(text)) {
    JOULES_FUZZ_CHECK(creds->first.find(':') == std::string::npos);
    JOULES_FUZZ_CHECK(creds->first.size() + creds->second.size() < size);
  }
  return 0;
}
