#include "term/messages.hpp"

#include <unistd.h>

#include <cerrno>

#include "text/escape.hpp"

namespace joules::term {
namespace {

std::string line(std::string_view kind, std::string_view what) {
  std::string out = "joules: ";
  out += kind;
  out += text::escape_for_terminal(what);
  out += '\n';
  return out;
}

void write_stderr(const std::string& s) {
  std::size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = write(STDERR_FILENO, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere to say it: never worth failing for
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

std::string error_line(std::string_view what) {
  return line("error: ", what);
}
std::string note_line(std::string_view what) {
  return line("note: ", what);
}
std::string warning_line(std::string_view what) {
  return line("warning: ", what);
}

void print_error(std::string_view what) {
  write_stderr(error_line(what));
}
void print_note(std::string_view what) {
  write_stderr(note_line(what));
}
void print_warning(std::string_view what) {
  write_stderr(warning_line(what));
}

}  // namespace joules::term
