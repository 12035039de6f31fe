#pragma once
// The key a number of a log message is read under (steps/fields.cpp): "iter" of "iter: 19",
// "Epoch" of "Epoch(train) [1]", with the words before it that say whether the number is a
// step line's counter or a step mentioned.  Internal to src/steps; pure.

#include <cstddef>
#include <string_view>

namespace joules::steps {

// What may stand between a key and its number: "iter: 19", "step = 100", "\"current_steps\": 3",
// "Batch [40]", "| iterations | 18".
constexpr bool key_gap(char c) {
  return c == ' ' || c == '\t' || c == ':' || c == '=' || c == '"' || c == '\'' || c == '[' ||
         c == '(' || c == '|' || c == '#';
}

// What stands before a number in a message.
struct key_context {
  std::string_view key;          // the word across key_gap characters, or empty
  std::string_view qualifier;    // "train" of "Epoch(train) [1]"
  std::string_view prev;         // the word before the key: "at" of "at step 500"
  std::string_view before_prev;  // the word before that: "Score" of "Score at iteration 185"
  bool bracket = false;          // a '[' stood between the key and the number
};

// The key before position `at` of `s` (a number's start).
key_context key_before(std::string_view s, std::size_t at);

// Whether the number at [at, end) stands alone in the parenthesis or the table cell that opens
// the message: "(1) loss = 0.5", "| 1     | 2.931 |" (the first cell of a drawn table's row).
bool alone_in_opening(std::string_view s, std::size_t at, std::size_t end);

}  // namespace joules::steps
