#pragma once
// "Did you mean": the candidate closest to what the user typed, when it is close enough to be a
// typo (`wrapp` -> `wrap`, `--interval-ms` -> `--interval`, `--backend simm` -> `sim`).  Pure.

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace joules::options {

// Optimal string alignment distance (Levenshtein with swaps of neighbours), ASCII case-folded.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `typed`, if within a typo's reach: at most 1 edit for words up to 4
// letters, 2 up to 8, 3 beyond; or `typed` is the start of exactly one candidate, or one
// candidate is the start of `typed` (`--interval-ms`).  Ties go to the first candidate.
std::optional<std::string> closest(std::string_view typed, std::span<const std::string> candidates);

// " (did you mean X?)" when there is a closest candidate, else "".
std::string suggestion(std::string_view typed, std::span<const std::string> candidates);

}  // namespace joules::options
