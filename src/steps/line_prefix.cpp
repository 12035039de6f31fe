#include "steps/line_prefix.hpp"

#include <array>
#include <cstdint>
#include <cstring>

#include "steps/field_words.hpp"
#include "steps/scan.hpp"

namespace joules::steps {
namespace {

constexpr bool is_control(char c) {
  const auto u = static_cast<unsigned char>(c);
  return (u < 0x20 && c != '\t') || u == 0x7f;
}

// Appends `seg` without escape sequences (CSI, OSC, two-byte ESC x) and control bytes.
void append_visible(std::string_view seg, std::string& out) {
  for (std::size_t i = 0; i < seg.size(); ++i) {
    const char c = seg[i];
    if (c == '\x1b') {
      if (i + 1 >= seg.size()) break;
      const char k = seg[i + 1];
      if (k == '[') {  // CSI: parameters and intermediates, then one final byte in @..~
        std::size_t j = i + 2;
        while (j < seg.size() && (seg[j] < '@' || seg[j] > '~'))
          ++j;
        i = j;
      } else if (k == ']') {  // OSC: up to BEL or ESC backslash
        std::size_t j = i + 2;
        while (j < seg.size() && seg[j] != '\a' && seg[j] != '\x1b')
          ++j;
        i = (j < seg.size() && seg[j] == '\x1b') ? j + 1 : j;
      } else {
        i = i + 1;
      }
      continue;
    }
    if (!is_control(c)) out.push_back(c);
  }
}

// hh:mm, optionally :ss and a fraction; returns the length or 0.
std::size_t clock_len(std::string_view s) {
  if (s.size() < 5 || !is_digit(s[0]) || !is_digit(s[1]) || s[2] != ':' || !is_digit(s[3]) ||
      !is_digit(s[4])) {
    return 0;
  }
  std::size_t i = 5;
  if (i + 2 < s.size() && s[i] == ':' && is_digit(s[i + 1]) && is_digit(s[i + 2])) {
    i += 3;
    if (i + 1 < s.size() && (s[i] == '.' || s[i] == ',') && is_digit(s[i + 1])) {
      ++i;
      while (i < s.size() && is_digit(s[i]))
        ++i;
    }
  }
  // "22:30:4", "12:345": not a clock, or one cut short; its digits must not be left behind as a
  // counter.
  if (i < s.size() && (is_digit(s[i]) || (s[i] == ':' && i + 1 < s.size() && is_digit(s[i + 1]))))
    return 0;
  if (i < s.size() && s[i] == 'Z') ++i;
  return i;
}

std::size_t digits_at(std::string_view s, std::size_t i) {
  std::size_t n = 0;
  while (i + n < s.size() && is_digit(s[i + n]))
    ++n;
  return n;
}

// A date (2024-01-02, 2024/01/02, 01/02/2024, 01/02/24) followed by an optional clock time, or a
// clock time alone.  Returns the length or 0.
std::size_t timestamp_len(std::string_view s) {
  if (const std::size_t c = clock_len(s)) return c;
  const std::size_t a = digits_at(s, 0);
  if (a != 4 && a != 2) return 0;
  if (a >= s.size() || (s[a] != '-' && s[a] != '/')) return 0;
  const char sep = s[a];
  const std::size_t b = digits_at(s, a + 1);
  if (b != 2 || a + 3 >= s.size()) return 0;
  if (a == 2 && sep == '/' && s[a + 3] == ' ') {  // "04/21 21:03:53" (MMEngine, no year)
    const std::size_t t = clock_len(s.substr(a + 4));
    return t == 0 ? 0 : a + 4 + t;
  }
  if (s[a + 3] != sep) return 0;
  const std::size_t c = digits_at(s, a + 4);
  if (!(a == 4 ? c == 2 : (c == 4 || c == 2))) return 0;
  std::size_t i = a + 4 + c;
  if (i + 1 < s.size() && (s[i] == ' ' || s[i] == 'T')) {
    if (const std::size_t t = clock_len(s.substr(i + 1))) {
      i += 1 + t;
    } else if (is_digit(s[i + 1])) {
      return 0;  // "2019-08-21 14Upoc": a timestamp cut short, whose digits are no counter
    }
  }
  // A UTC offset after the time: +00:00 or +0000.
  if (i + 5 <= s.size() && (s[i] == '+' || s[i] == '-') && is_digit(s[i + 1]) &&
      is_digit(s[i + 2])) {
    std::size_t j = i + 3;
    if (j < s.size() && s[j] == ':') ++j;
    if (digits_at(s, j) == 2) i = j + 2;
  }
  return i;
}

// glog/absl: "I0102 03:04:05.678901   123 file.py:45] ".  Returns the length or 0.
std::size_t glog_len(std::string_view s) {
  if (s.size() < 20) return 0;
  const char l = s[0];
  if (l != 'I' && l != 'W' && l != 'E' && l != 'F') return 0;
  if (digits_at(s, 1) != 4 || s[5] != ' ' || clock_len(s.substr(6)) == 0) return 0;
  const std::size_t close = s.substr(0, 128).find("] ", 6);
  if (close == std::string_view::npos) return 0;
  return close + 2;
}

constexpr std::array<std::string_view, 8> kLevels = {"INFO",  "WARNING", "WARN",     "ERROR",
                                                     "DEBUG", "TRACE",   "CRITICAL", "NOTICE"};

// The length of a log level word at the start of `s` that ends at a separator, or 0.
std::size_t level_len(std::string_view s) {
  for (const auto lv : kLevels) {
    if (s.substr(0, lv.size()) == lv) {
      const char next = lv.size() < s.size() ? s[lv.size()] : ' ';
      if (next == ' ' || next == ':' || next == '|' || next == ']' || next == '\t' || next == '-')
        return lv.size();
    }
  }
  return 0;
}

constexpr bool is_separator(char c) {
  return c == ' ' || c == '\t' || c == '-' || c == '|' || c == ':' || c == '>' || c == ']';
}

std::size_t skip_separators(std::string_view s, std::size_t i) {
  while (i < s.size() && is_separator(s[i])) {
    // A minus sign that starts a number is message text, not a separator.
    if (s[i] == '-' && i + 1 < s.size() && is_digit(s[i + 1])) break;
    ++i;
  }
  return i;
}

// Whether the text of a leading [...] group is a prefix (timestamp, level, logger, rank) rather
// than the message itself ("[step=10/100]", "[batch=3/9]", "[ 50/1000]", "[1/4]").
bool prefix_bracket(std::string_view inside) {
  if (inside.empty()) return false;
  for (std::size_t i = 0; i + 5 <= inside.size(); ++i) {
    if (clock_len(inside.substr(i)) != 0) return true;
  }
  // A group that ends with a log level: "[steps/nnet3/chain/train.py:529 - train - INFO ]"
  // (Kaldi's Python scripts).
  std::size_t end = inside.size();
  while (end > 0 && is_space(inside[end - 1]))
    --end;
  std::size_t last = end;
  while (last > 0 && is_alpha(inside[last - 1]))
    --last;
  if (last < end && last > 0 && (is_space(inside[last - 1]) || inside[last - 1] == '-') &&
      level_len(inside.substr(last, end - last)) == end - last) {
    return true;
  }
  std::size_t i = 0;
  while (i < inside.size() && is_space(inside[i]))
    ++i;
  if (i == inside.size() || is_digit(inside[i])) return false;
  // A source location, "train.py:535" (icefall), "solver.cpp:208": the logger's, whatever the
  // file is named.
  if (const std::size_t colon = inside.rfind(':');
      colon != std::string_view::npos && colon + 1 < inside.size() &&
      digits_at(inside, colon + 1) == inside.size() - colon - 1) {
    const std::size_t dot = inside.rfind('.', colon);
    if (dot != std::string_view::npos && dot > i && dot + 1 < colon && is_alpha(inside[dot + 1]) &&
        inside.find(' ', i) == std::string_view::npos) {
      return true;
    }
  }
  static constexpr std::array<std::string_view, 8> kProgress = {"step", "batch", "epoch", "iter",
                                                                "eval", "train", "val",   "test"};
  for (const auto word : kProgress) {
    if (starts_with_ci(inside.substr(i), word)) return false;
  }
  return inside.find('%') == std::string_view::npos;
}

// "worker-3: ", "localhost: ", "node12.cluster-1: " from pdsh-style launchers.
std::size_t host_prefix_len(std::string_view s) {
  std::size_t i = 0;
  bool dash_digits = false;
  // Host names are short; bounding the scan keeps long lines cheap.
  while (i < s.size() && i < 64 && (is_alnum(s[i]) || s[i] == '-' || s[i] == '.' || s[i] == '_'))
    ++i;
  if (i == 0 || i + 1 >= s.size() || s[i] != ':' || s[i + 1] != ' ') return 0;
  const std::string_view name = s.substr(0, i);
  const std::size_t dash = name.rfind('-');
  if (dash != std::string_view::npos && dash + 1 < name.size()) {
    dash_digits = digits_at(name, dash + 1) == name.size() - dash - 1;
  }
  if (name == "localhost" || (dash_digits && is_alpha(name[0]))) return i + 2;
  return 0;
}

// A logger name after a level: "root:" (Python's default format), "__main__:train:42 - "
// (loguru), "train_inner | " (fairseq), "composer.trainer.trainer: ".  Never a key followed by
// its value ("step: 4", "Epoch: [0]" after "INFO:root:").
std::size_t logger_len(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && i < 96 &&
         (is_alnum(s[i]) || s[i] == '_' || s[i] == '.' || s[i] == '<' || s[i] == '>')) {
    ++i;
  }
  // A logger is named by a word: "1epoch:train:1-682batch:" (ESPnet2) is the message.
  if (i == 0 || i >= s.size() || is_digit(s[0])) return 0;
  const std::string_view name = s.substr(0, i);
  const std::string_view rest = s.substr(i);
  // Nor by a counter's name: "EPOCH - 1 : training on ..." (Gensim) is the message.
  if (names_counter(name)) return 0;
  if (rest.substr(0, 3) == " - " || rest.substr(0, 3) == " | ") return i + 3;
  if (rest[0] == '\t') return i + 1;
  if (rest[0] != ':') return 0;
  // loguru: name:function:line - message
  std::size_t j = 0;
  std::size_t last = 0;  // where the last component begins
  while (j < rest.size() && rest[j] == ':') {
    last = ++j;
    while (j < rest.size() && (is_alnum(rest[j]) || rest[j] == '_'))
      ++j;
  }
  if (rest.substr(j, 3) == " - " && !names_counter(rest.substr(last, j - last))) return i + j + 3;
  if (j < rest.size() && rest[j] == '\t') return i + j + 1;  // OLMo-core: name:line<TAB>
  if (rest.size() > 1 && !is_space(rest[1]) && !is_digit(rest[1])) return i + 1;  // root:msg
  if (name.find('.') != std::string_view::npos && rest.size() > 2 && rest[1] == ' ' &&
      !is_digit(rest[2]) && rest[2] != '-') {
    return i + 2;
  }
  return 0;
}

// Whether `s` has a control byte other than tab, eight bytes at a time: most lines have none.
bool has_control(std::string_view s) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
  constexpr std::uint64_t kHighs = 0x8080808080808080ULL;
  std::size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    // A byte below 0x20 or equal to 0x7f sets its high bit in `below` or `del`.
    const std::uint64_t below = (w - kOnes * 0x20) & ~w & kHighs;
    const std::uint64_t x = w ^ (kOnes * 0x7f);
    const std::uint64_t del = (x - kOnes) & ~x & kHighs;
    if ((below | del) == 0) continue;
    for (std::size_t j = i; j < i + 8; ++j) {
      if (is_control(s[j])) return true;
    }
  }
  for (; i < s.size(); ++i) {
    if (is_control(s[i])) return true;
  }
  return false;
}

}  // namespace

std::string_view visible_text(std::string_view raw, std::string& scratch) {
  if (!has_control(raw)) return raw;
  // The last \r-segment with visible text is what the terminal shows.
  std::size_t end = raw.size();
  while (true) {
    const std::size_t cr = end == 0 ? std::string_view::npos : raw.rfind('\r', end - 1);
    const std::size_t begin = cr == std::string_view::npos ? 0 : cr + 1;
    scratch.clear();
    append_visible(raw.substr(begin, end - begin), scratch);
    if (!blank(scratch) || begin == 0) return scratch;
    end = cr;
  }
}

std::string_view strip_prefixes(std::string_view line) {
  std::size_t i = 0;
  for (int rounds = 0; rounds < 12; ++rounds) {
    while (i < line.size() && is_space(line[i]))
      ++i;
    const std::string_view s = line.substr(i);
    if (s.empty()) break;
    if (s[0] == '[') {
      const std::size_t close = s.find(']');
      if (close == std::string_view::npos) break;
      // Open MPI's --tag-output (mpirun, horovodrun): "[1,0]<stdout>:", job and rank.
      const std::string_view tag = s.substr(close + 1, 9);
      if (tag == "<stdout>:" || tag == "<stderr>:") {
        i += close + 10;
        continue;
      }
      if (!prefix_bracket(s.substr(1, close - 1))) break;
      i += close + 1;
      if (i < line.size() && line[i] == ':') ++i;
      continue;
    }
    if (s.substr(0, 2) == "| ") {  // old fairseq: "| epoch 001:    450 / 1891 loss=..."
      i += 2;
      continue;
    }
    if (s[0] == '<' && (s.substr(0, 9) == "<stdout>:" || s.substr(0, 9) == "<stderr>:")) {
      i += 9;
      continue;
    }
    if (const std::size_t g = glog_len(s)) {
      i += g;
      continue;
    }
    if (const std::size_t t = timestamp_len(s)) {
      i = skip_separators(line, i + t);
      continue;
    }
    // srun --label: "12: ".  Not "145: 4.54, 7.31 avg loss" (darknet's iteration) nor
    // "13:     learn 0.289" (CatBoost's, padded): a rank label is followed by text.
    if (const std::size_t d = digits_at(s, 0); d > 0 && d <= 5 && s.size() > d + 2 && s[d] == ':' &&
                                               s[d + 1] == ' ' && !is_digit(s[d + 2]) &&
                                               !is_space(s[d + 2]) && s[d + 2] != '-') {
      i += d + 2;
      continue;
    }
    if (const std::size_t h = host_prefix_len(s)) {
      i += h;
      continue;
    }
    if (starts_with_ci(s, "rank") && s.size() > 4 && is_digit(s[4])) {
      i += 4 + digits_at(s, 4);
      continue;
    }
    // A level, here or after a logger name and other fields: "mmengine - INFO - ".
    std::size_t at = std::string_view::npos;
    const std::size_t window = s.size() < 100 ? s.size() : 100;
    for (std::size_t j = 0; j < window; ++j) {
      const char c = s[j];
      if (c != 'I' && c != 'W' && c != 'E' && c != 'D' && c != 'T' && c != 'C' && c != 'N')
        continue;
      if (j > 0 && !is_separator(s[j - 1]) && s[j - 1] != '[') continue;
      if (level_len(s.substr(j)) != 0) {
        at = j;
        break;
      }
    }
    if (at == std::string_view::npos) break;
    i = skip_separators(line, i + at + level_len(s.substr(at)));
    i += logger_len(line.substr(i));
  }
  while (i < line.size() && is_space(line[i]))
    ++i;
  return line.substr(i);
}

}  // namespace joules::steps
