#pragma once
// Which of the measured command's output streams a line came from.

#include <string_view>

namespace joules {

enum class child_stream { out, err };

inline std::string_view to_string(child_stream s) {  // "stdout", "stderr"
  return s == child_stream::err ? "stderr" : "stdout";
}

}  // namespace joules
