#include "export/metrics/text_format.hpp"

#include <array>
#include <charconv>
#include <cmath>

#include "export/metrics/exposition.hpp"
#include "text/utf8.hpp"
#include "util/number_text.hpp"

namespace joules::exporter {
namespace {

// Appends `s` escaping `\`, newline and, when `quote` is set, `"`; copies runs of plain bytes
// in one append, since nearly every value is plain ASCII.
void append_escaped(std::string& out, std::string_view s, bool quote) {
  std::size_t run = 0;  // start of the pending run of bytes copied as they are
  std::size_t i = 0;
  const auto flush = [&](std::size_t end) { out.append(s.data() + run, end - run); };
  while (i < s.size()) {
    const char c = s[i];
    if (static_cast<unsigned char>(c) >= 0x80) {
      const std::size_t n = text::utf8_sequence_length(s, i);
      if (n != 0) {
        i += n;
        continue;
      }
      flush(i);
      out += text::kReplacementChar;
      run = ++i;
      continue;
    }
    const char* escape = nullptr;
    if (c == '\\') escape = "\\\\";
    if (c == '\n') escape = "\\n";
    if (quote && c == '"') escape = "\\\"";
    if (escape == nullptr) {
      ++i;
      continue;
    }
    flush(i);
    out += escape;
    run = ++i;
  }
  flush(i);
}

std::string_view type_name(metric_type t) {
  switch (t) {
    case metric_type::counter:
      return "counter";
    case metric_type::gauge:
    case metric_type::info:
      break;
  }
  return "gauge";
}

}  // namespace

void append_label_value_escaped(std::string& out, std::string_view value) {
  append_escaped(out, value, true);
}

void append_help_escaped(std::string& out, std::string_view help) {
  append_escaped(out, help, false);
}

void append_sample_value(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
    return;
  }
  if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
    return;
  }
  std::array<char, 32> buf{};
  std::to_chars_result r{};
  // 2^63 is exactly representable, so every integral double below it converts to int64 exactly.
  constexpr double kTwoPow63 = 9223372036854775808.0;
  if (std::trunc(value) == value && std::fabs(value) < kTwoPow63) {
    r = std::to_chars(buf.data(), buf.data() + buf.size(), static_cast<std::int64_t>(value));
  } else {
    r = to_chars_clean(buf.data(), buf.data() + buf.size(), value);
  }
  out.append(buf.data(), r.ptr);
}

void append_timestamp(std::string& out, std::int64_t ms) {
  std::array<char, 24> buf{};
  const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), ms);
  out.append(buf.data(), r.ptr);
}

void write_text_format(const exposition& e, std::string& out) {
  for (const auto& family : e.families()) {
    if (family->empty()) continue;
    const std::string& name = family->name();
    if (!family->help().empty()) {
      out += "# HELP ";
      out += name;
      out += ' ';
      append_help_escaped(out, family->help());
      out += '\n';
    }
    out += "# TYPE ";
    out += name;
    out += ' ';
    out += type_name(family->type());
    out += '\n';
    for (const sample& s : family->samples()) {
      out += name;
      if (!s.labels.empty()) {
        out += '{';
        out += s.labels;
        out += '}';
      }
      out += ' ';
      append_sample_value(out, s.value);
      if (s.timestamp_ms) {
        out += ' ';
        append_timestamp(out, *s.timestamp_ms);
      }
      out += '\n';
    }
  }
}

}  // namespace joules::exporter
