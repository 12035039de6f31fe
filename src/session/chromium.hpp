#pragma once
// Headless Chromium turns the HTML report into a PDF (`joules report --pdf`): Debian's
// `chromium` package, or the program JOULES_CHROMIUM names.  It runs with a profile of its own
// in a temporary folder (never the user's), without a sandbox only when joules runs as root
// (Chromium refuses root otherwise), and is given at most kTimeout.
//
// Not thread-safe; used on the main thread.

#include <chrono>
#include <optional>
#include <string>

namespace joules::session {

inline constexpr std::chrono::seconds kChromiumTimeout{120};

// The Chromium program to run: JOULES_CHROMIUM, else the first of chromium, chromium-browser,
// google-chrome, google-chrome-stable on PATH.  nullopt when there is none.
std::optional<std::string> find_chromium();

// Prints `html_path` (an existing file) to `pdf_path` through a temporary file renamed over it.
// Throws fatal_error with Chromium's last words when it fails or runs past kChromiumTimeout.
void print_pdf(const std::string& chromium, const std::string& html_path,
               const std::string& pdf_path);

}  // namespace joules::session
