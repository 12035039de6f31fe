#include "options/suggest.hpp"

#include <algorithm>
#include <vector>

namespace joules::options {
namespace {

char fold(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c + ('a' - 'A')) : c;
}

bool starts_with_folded(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), s.begin(),
                                                 [](char x, char y) { return fold(x) == fold(y); });
}

std::size_t reach(std::size_t length) {
  if (length <= 4) return 1;
  if (length <= 8) return 2;
  return 3;
}

}  // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // Three rows of the dynamic programme: enough for the transposition of neighbours.
  std::vector<std::size_t> before(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = fold(a[i - 1]) == fold(b[j - 1]) ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && fold(a[i - 1]) == fold(b[j - 2]) && fold(a[i - 2]) == fold(b[j - 1]))
        cur[j] = std::min(cur[j], before[j - 2] + 1);
    }
    before.swap(prev);
    prev.swap(cur);
  }
  return prev[b.size()];
}

std::optional<std::string> closest(std::string_view typed,
                                   std::span<const std::string> candidates) {
  if (typed.empty()) return std::nullopt;
  const std::string* best = nullptr;
  std::size_t best_distance = reach(typed.size()) + 1;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(typed, c);
    if (d < best_distance) {
      best = &c;
      best_distance = d;
    }
  }
  if (best != nullptr) return *best;
  // A prefix either way: `--inter` for --interval, `--interval-ms` for --interval.
  const std::string* only = nullptr;
  for (const auto& c : candidates) {
    if (c.size() < 3) continue;
    if (starts_with_folded(c, typed) || starts_with_folded(typed, c)) {
      if (only != nullptr) return std::nullopt;
      only = &c;
    }
  }
  return only != nullptr ? std::optional<std::string>(*only) : std::nullopt;
}

std::string suggestion(std::string_view typed, std::span<const std::string> candidates) {
  const auto c = closest(typed, candidates);
  return c ? " (did you mean " + *c + "?)" : std::string();
}

}  // namespace joules::options
