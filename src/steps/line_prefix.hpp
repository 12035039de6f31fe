#pragma once
// What a terminal would show of one output line, and the message inside it.  Trainers print
// through loggers, launchers and progress bars that wrap the interesting text in timestamps, log
// levels, logger names, rank and host prefixes, colour codes and carriage returns; the format
// scanners only ever see the message.  Pure functions.

#include <string>
#include <string_view>

namespace joules::steps {

// The text a terminal shows for `raw`: the last carriage-return segment that has any visible
// text (tqdm rewrites a bar in place with \r), without ANSI escape sequences and other control
// bytes.  Returns a view of `raw` when nothing had to be removed, else a view of `scratch`.
std::string_view visible_text(std::string_view raw, std::string& scratch);

// `line` without its leading timestamps ("2024-01-02 03:04:05,678", "[01/02 12:34:56 ...]",
// glog's "I0102 03:04:05.678 123 f.py:9]"), log levels and logger names ("root - INFO - ",
// "| INFO | train_inner | ", "INFO:root:"), and rank or host prefixes ("[rank0]:", "0: ",
// "[default0]:", "worker-1: ", "[1,0]<stdout>:").  Bracketed text that looks like progress
// ("[step=10/100]", "[batch=3/9]", "[ 50/1000]") is kept: it is the message.
std::string_view strip_prefixes(std::string_view line);

}  // namespace joules::steps
