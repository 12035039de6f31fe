#pragma once
// Golden files: what joules shows people, kept in tests/golden and compared byte for byte.
// `make golden` (JOULES_UPDATE_GOLDEN=1) rewrites them; `git diff tests/golden` then shows what a
// change did to every screen, help text and report.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace joules::testing {

inline std::string read_golden(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Compares `actual` with tests/golden/NAME (NAME may hold folders); JOULES_UPDATE_GOLDEN=1
// writes it there instead.
inline void expect_golden(const std::string& name, const std::string& actual) {
  const std::filesystem::path path = std::filesystem::path(JOULES_GOLDEN_DIR) / name;
  if (std::getenv("JOULES_UPDATE_GOLDEN") != nullptr) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << actual;
  }
  EXPECT_EQ(actual, read_golden(path.string()))
      << "golden file " << path.string() << " differs; make golden rewrites it";
}

}  // namespace joules::testing
