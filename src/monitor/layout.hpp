#pragma once
// How `joules monitor` lays out its screen lines: a line is a lead ("GPU 0", " health   ") and
// parts ("sm 88%", a health flag) that are never cut; a part that would pass the screen's edge
// starts a new, indented line, so that every flag stays readable on a narrow terminal.  Pure
// logic, on the main thread.

#include <string>
#include <string_view>
#include <vector>

namespace joules::monitor {

using lines = std::vector<std::string>;
using items = std::vector<std::string>;

// ANSI SGR colours, only when `color` (a terminal, NO_COLOR unset).
struct painter {
  bool color;
  std::string operator()(std::string_view text, std::string_view sgr) const;
};

// One piece of a line, and what goes before it unless it starts a line.
struct part {
  std::string text;
  std::string sep = "  ";
  bool optional = false;  // left out, rather than put on a line of its own, when it does not fit
};
using parts = std::vector<part>;

// Each item a part, with `sep` before it.
parts joined(const items& v, std::string_view sep);
// A named list that may wrap between its entries: "throttle power cap, hw thermal" (`sep`
// before the first entry, the entries parted by ", ").
parts group(std::string_view name, const items& v, std::string_view sep);
parts operator+(parts a, const parts& b);

// Appends `lead` then `ps` to `out`, on as many lines of `width` cells as they need: a part
// that does not fit goes to a new line indented by `indent` (one wider than a whole line is
// cut later, by fit()).  Empty parts are skipped.  A lead that does not end in a space (a
// title: "GPU 0") is parted from the first part by that part's separator.
void flow(lines& out, const std::string& lead, const parts& ps, std::size_t width,
          std::size_t indent);
void flow(lines& out, const std::string& lead, const items& v, std::string_view sep,
          std::size_t width, std::size_t indent);

}  // namespace joules::monitor
