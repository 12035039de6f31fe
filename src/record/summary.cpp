#include "record/summary.hpp"

#include <algorithm>
#include <string>

#include "util/strings.hpp"

namespace joules {
namespace {

// Columns a UTF-8 string takes (one per code point: the summary has no wide characters).
std::size_t columns(std::string_view s) {
  return static_cast<std::size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0U) != 0x80U; }));
}

// `text` in lines of at most `width` columns, each but the first starting with `indent` spaces
// (the first goes on from `indent` too: the block's margin is already there).
void wrap_into(std::string& out, std::string_view text, std::size_t indent, std::size_t width) {
  out += wrap_words(text, indent, indent, width);
}

}  // namespace

std::string run_summary::line() const {
  std::string s = "joules: " + headline;
  for (const auto& p : parts) {
    s += "; ";
    s += p.text;
  }
  return s;
}

std::string run_summary::block(std::size_t width) const {
  std::size_t margin = 0;
  for (const auto& p : parts)
    margin = std::max(margin, columns(p.label));
  const std::size_t indent = 2 + margin + 2;
  std::string out;
  wrap_into(out, "joules: " + headline, 2, width);
  out += '\n';
  for (const auto& p : parts) {
    out += "  ";
    out += p.label;
    out.append(margin - columns(p.label) + 2, ' ');
    const std::string& text = p.block_text.empty() ? p.text : p.block_text;
    wrap_into(out, p.note.empty() ? text : text + " (" + p.note + ")", indent,
              std::max(width, indent + 20));
    out += '\n';
  }
  return out;
}

}  // namespace joules
