#include "steps/field_keys.hpp"

#include "steps/field_words.hpp"
#include "steps/scan.hpp"

namespace joules::steps {
namespace {

constexpr bool key_char(char c) {
  return is_alnum(c) || c == '_' || c == '.' || c == '/' || c == '-';
}

// The alphabetic word that ends at `end` (spaces before `end` skipped), and where it begins.
std::string_view word_ending_at(std::string_view s, std::size_t end, std::size_t& begin) {
  while (end > 0 && is_space(s[end - 1]))
    --end;
  begin = end;
  while (begin > 0 && is_alpha(s[begin - 1]))
    --begin;
  return s.substr(begin, end - begin);
}

}  // namespace

bool alone_in_opening(std::string_view s, std::size_t at, std::size_t end) {
  if (s.empty() || (s.front() != '(' && s.front() != '|')) return false;
  for (std::size_t i = 1; i < at; ++i) {
    if (!is_space(s[i])) return false;
  }
  while (end < s.size() && is_space(s[end]))
    ++end;
  return end < s.size() && s[end] == (s.front() == '(' ? ')' : '|');
}

key_context key_before(std::string_view s, std::size_t at) {
  key_context c;
  std::size_t i = at;
  std::size_t gap = 0;
  while (i > 0 && key_gap(s[i - 1]) && gap < 40) {
    if (s[i - 1] == '[') c.bracket = true;
    --i;
    ++gap;
  }
  // "EPOCH - 1 : training on ..." (Gensim): a dash between a counter's name and its number.
  if (i >= 3 && s[i - 1] == '-' && s[i - 2] == ' ') {
    std::size_t b = 0;
    const std::string_view name = word_ending_at(s, i - 2, b);
    if (!name.empty() && names_counter(name)) i = b + name.size();
  }
  // "Epoch(train) [1]", "Iter(val) [50]": the word before a short parenthesised qualifier.
  if (i > 0 && s[i - 1] == ')') {
    const std::size_t open = s.rfind('(', i - 1);
    if (open != std::string_view::npos && i - open <= 16) {
      c.qualifier = s.substr(open + 1, i - 2 - open);
      i = open;
    }
  }
  const std::size_t e = i;
  while (i > 0 && key_char(s[i - 1]) && e - i < 48)
    --i;
  c.key = s.substr(i, e - i);
  // "Epoch  1, 12900/37527" must not read "1," as a key: a key starts with a letter.
  while (!c.key.empty() && !is_alpha(c.key.front()))
    c.key.remove_prefix(1);
  std::size_t b = 0;
  c.prev = word_ending_at(s, i, b);
  std::size_t w = 0;
  c.before_prev = word_ending_at(s, b, w);
  return c;
}

}  // namespace joules::steps
