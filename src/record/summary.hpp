#pragma once
// What a person reads when a run ends: the headline (energy, duration, power) and the parts
// that follow it (devices and method, steps and J/token, kWh, CO2e and cost, what was not
// measured and why).  One line for logs (`--summary line`, and whenever stderr is not a
// terminal), an aligned block on a terminal: the same parts either way.  Pure: the caller
// escapes and prints.

#include <cstddef>
#include <string>
#include <vector>

namespace joules {

struct summary_part {
  std::string label;            // the block's margin: "devices", "steps", "CO2e", ...
  std::string text;             // the figure, as both forms show it
  std::string note;             // the block only: what the figure means, in words; may be empty
  std::string block_text = {};  // the block's text when the label already says part of it
};

struct run_summary {
  std::string headline;  // "13430 J (3.73 Wh) in 5.00 s, avg 2684 W, peak 5427 W"
  std::vector<summary_part> parts;

  // "joules: HEADLINE; TEXT; TEXT; ..." (notes left out).
  std::string line() const;
  // "joules: HEADLINE", then one row per part, labels aligned, text (and note) wrapped to
  // `width` columns under itself.  Ends with a newline.
  std::string block(std::size_t width) const;
};

}  // namespace joules
