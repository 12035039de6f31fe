#pragma once
// joules' own lines on stderr: `joules: error: ...`, `joules: warning: ...`, `joules: note: ...`.
// Each is one line whatever it quotes: outside strings in it (a GPU name, a value the user typed
// with a newline or an escape sequence) are shown escaped (text/escape.hpp).

#include <string>
#include <string_view>

namespace joules::term {

// "joules: error: " + what, escaped, with a newline.
std::string error_line(std::string_view what);
std::string note_line(std::string_view what);
std::string warning_line(std::string_view what);

// The same lines written to stderr in one write.
void print_error(std::string_view what);
void print_note(std::string_view what);
void print_warning(std::string_view what);

}  // namespace joules::term
