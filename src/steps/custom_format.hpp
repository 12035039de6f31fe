#pragma once
// User-supplied step formats (--step-regex), compiled once with PCRE2 and its JIT.  Internal to
// src/steps; PCRE2's header stays out of the public step_parser.hpp.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace joules::steps {

struct custom_match {
  std::uint64_t step = 0;
  std::optional<std::uint64_t> total;
};

class custom_formats {
 public:
  // Throws usage_error: "--step-regex 'RE': PCRE2 error at offset N: MESSAGE", or when the
  // regex has no capture group for the step.
  explicit custom_formats(const std::vector<std::string>& patterns);
  ~custom_formats();
  custom_formats(const custom_formats&) = delete;
  custom_formats& operator=(const custom_formats&) = delete;

  bool empty() const { return patterns_.empty(); }
  // The first pattern that matches `text` and captures a whole unsigned integer as the step.
  std::optional<custom_match> find(std::string_view text) const;

 private:
  struct pattern;
  std::vector<std::unique_ptr<pattern>> patterns_;
};

}  // namespace joules::steps
