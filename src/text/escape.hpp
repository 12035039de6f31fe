#pragma once
// Outside strings on their way to a terminal or a log line: a process name, a label, a log
// line, a GPU name or a value a user typed may hold escape sequences that would recolour,
// retitle or redraw the reader's terminal, newlines that would forge a second log line, or
// invalid UTF-8.  Everything joules writes for people passes them through here.  Pure.

#include <string>
#include <string_view>

namespace joules::text {

// `s` with control characters shown instead of acted on: \n, \r and \t as those two
// characters, other C0 and C1 controls and DEL as \xNN (\x1b for ESC), and each byte of invalid
// UTF-8 as \xNN.  Printable text, UTF-8 included, is kept as it is.
std::string escape_for_terminal(std::string_view s);

// True when escape_for_terminal(s) == s: the common case, checked without copying.
bool is_terminal_safe(std::string_view s);

// `s` as HTML text or attribute value: & < > " ' as character references, control characters
// as escape_for_terminal shows them, invalid UTF-8 as \xNN.  A label `<script>` in a record
// stays text in the report.
std::string escape_for_html(std::string_view s);

}  // namespace joules::text
