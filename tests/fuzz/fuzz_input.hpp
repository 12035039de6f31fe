#pragma once
// Helpers shared by the libFuzzer targets of tests/fuzz: cutting one input into fields, and a
// check that aborts (libFuzzer reports the input) when an invariant does not hold.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace joules::fuzz {

// Aborts, naming the check, when `ok` is false: libFuzzer then saves the input.
inline void check_at(bool ok, const char* what, const char* file, int line) {
  if (ok) return;
  std::fprintf(stderr, "fuzz check failed: %s (%s:%d)\n", what, file, line);
  std::abort();
}

}  // namespace joules::fuzz

#define JOULES_FUZZ_CHECK(x) ::joules::fuzz::check_at(static_cast<bool>(x), #x, __FILE__, __LINE__)

namespace joules::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// `text` cut at every `sep`; always at least one field.
inline std::vector<std::string> fields(std::string_view text, char sep) {
  std::vector<std::string> out;
  for (;;) {
    const std::size_t at = text.find(sep);
    out.emplace_back(text.substr(0, at));
    if (at == std::string_view::npos) return out;
    text.remove_prefix(at + 1);
  }
}

}  // namespace joules::fuzz
