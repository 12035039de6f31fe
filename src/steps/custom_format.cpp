#define PCRE2_CODE_UNIT_WIDTH 8
#include "steps/custom_format.hpp"

#include <fmt/format.h>
#include <pcre2.h>

#include "util/error.hpp"
#include "util/strings.hpp"

namespace joules::steps {
namespace {

std::optional<std::uint64_t> group_uint(pcre2_match_data* md, std::uint32_t group,
                                        std::string_view text) {
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
  const PCRE2_SIZE b = ov[2 * group];
  const PCRE2_SIZE e = ov[2 * group + 1];
  if (b == PCRE2_UNSET || e == PCRE2_UNSET || e < b || e > text.size()) return std::nullopt;
  return parse_uint(text.substr(b, e - b), 0, UINT64_MAX);
}

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  const int n = pcre2_get_error_message(code, buf, sizeof buf);
  if (n < 0) return fmt::format("error {}", code);
  return std::string(reinterpret_cast<const char*>(buf), static_cast<std::size_t>(n));
}

}  // namespace

struct custom_formats::pattern {
  pcre2_code* code = nullptr;
  pcre2_match_data* data = nullptr;
  std::uint32_t step_group = 0;
  std::uint32_t total_group = 0;  // 0: none
  ~pattern() {
    pcre2_match_data_free(data);
    pcre2_code_free(code);
  }
};

custom_formats::custom_formats(const std::vector<std::string>& patterns) {
  for (const auto& re : patterns) {
    auto p = std::make_unique<pattern>();
    int err = 0;
    PCRE2_SIZE offset = 0;
    p->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(re.data()), re.size(),
                            PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &err, &offset, nullptr);
    if (p->code == nullptr) {
      throw usage_error(fmt::format("--step-regex '{}': PCRE2 error at offset {}: {}", re, offset,
                                    pcre2_message(err)));
    }
    std::uint32_t groups = 0;
    pcre2_pattern_info(p->code, PCRE2_INFO_CAPTURECOUNT, &groups);
    const int total =
        pcre2_substring_number_from_name(p->code, reinterpret_cast<PCRE2_SPTR>("total"));
    p->total_group = total > 0 ? static_cast<std::uint32_t>(total) : 0;
    for (std::uint32_t g = 1; g <= groups; ++g) {
      if (g != p->total_group) {
        p->step_group = g;
        break;
      }
    }
    if (p->step_group == 0) {
      throw usage_error(fmt::format(
          "--step-regex '{}': no capture group for the step; put the step number in (\\d+)", re));
    }
    // JIT is an optimisation: without it (unsupported CPU) the interpreter still matches.
    pcre2_jit_compile(p->code, PCRE2_JIT_COMPLETE);
    p->data = pcre2_match_data_create_from_pattern(p->code, nullptr);
    patterns_.push_back(std::move(p));
  }
}

custom_formats::~custom_formats() = default;

std::optional<custom_match> custom_formats::find(std::string_view text) const {
  for (const auto& p : patterns_) {
    const int rc = pcre2_match(p->code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), 0,
                               0, p->data, nullptr);
    if (rc <= 0) continue;
    const auto step = group_uint(p->data, p->step_group, text);
    if (!step) continue;
    custom_match m;
    m.step = *step;
    if (p->total_group != 0) m.total = group_uint(p->data, p->total_group, text);
    return m;
  }
  return std::nullopt;
}

}  // namespace joules::steps
