#pragma once
// The files of data/ (grid intensities, cloud regions, CPU TDPs, equivalents), compiled into the
// binary by cmake/embed_data.cmake so that joules needs no data directory at run time.
// Thread-safety: immutable after static initialisation.

#include <optional>
#include <string_view>
#include <vector>

namespace joules::data {

struct embedded_file {
  std::string_view name;  // "grid_intensity.csv"
  std::string_view text;
};

const std::vector<embedded_file>& files();

// The text of data/<name>, or nullopt when no such file was embedded.
inline std::optional<std::string_view> table(std::string_view name) {
  for (const auto& f : files()) {
    if (f.name == name) return f.text;
  }
  return std::nullopt;
}

}  // namespace joules::data
