// Finds (key, value, unit) triples in the text of a log line.  The text is cut into fields at
// the separators trainers put between metrics ("|", ",", tab, " - ", braces), and each field is
// walked token by token: "key: value", "key=value", "key:value", "value unit", and with
// metric_style::spaced also "key words value" (nanoGPT's "loss 2.3456").

#include <array>
#include <cmath>

#include "steps/metrics.hpp"
#include "steps/scan.hpp"

namespace joules::steps {
namespace {

constexpr std::array<std::string_view, 30> kUnitWords = {
    "ms",     "s",       "sec",     "secs",     "seconds", "us",         "min",       "mins",
    "h",      "%",       "tok/s",   "tokens/s", "tok/sec", "tokens/sec", "samples/s", "samples/sec",
    "it/s",   "s/it",    "GiB",     "GB",       "MiB",     "MB",         "KiB",       "KB",
    "TFLOPS", "TFLOP/s", "ms/step", "s/step",   "minutes", "hours"};

bool unit_word(std::string_view t) {
  for (const auto u : kUnitWords) {
    if (t == u) return true;
  }
  return false;
}

// A comma between digit groups of one number ("10,050"), which does not separate fields.
bool thousands_comma(std::string_view s, std::size_t i) {
  return i > 0 && is_digit(s[i - 1]) && i + 3 < s.size() && is_digit(s[i + 1]) &&
         is_digit(s[i + 2]) && is_digit(s[i + 3]) && (i + 4 == s.size() || !is_digit(s[i + 4]));
}

constexpr bool is_quote_or_bracket(char c) {
  return c == '\'' || c == '"' || c == '(' || c == ')' || c == '[' || c == ']' || c == '{' ||
         c == '}';
}

std::string_view trim_token(std::string_view t) {
  while (!t.empty() && is_quote_or_bracket(t.front()))
    t.remove_prefix(1);
  while (!t.empty() && (is_quote_or_bracket(t.back()) || t.back() == ','))
    t.remove_suffix(1);
  return t;
}

// The unit right after a number: "ms", "GiB", "%", "tok/s", "ms/step"; stops at brackets.
std::string_view attached_unit(std::string_view rest) {
  std::size_t i = 0;
  const bool micro = rest.size() >= 2 && rest[0] == '\xc2' && rest[1] == '\xb5';  // µ
  if (micro) i = 2;
  if (!micro &&
      !(i < rest.size() && (is_alpha(rest[i]) || rest[i] == '%' ||
                            (rest[i] == '/' && i + 1 < rest.size() && is_alpha(rest[i + 1]))))) {
    return {};
  }
  while (i < rest.size() && (is_alnum(rest[i]) || rest[i] == '%' || rest[i] == '/'))
    ++i;
  return rest.substr(0, i);
}

class field_walker {
 public:
  field_walker(std::string_view field, metric_style style, std::vector<metric>& out,
               metric_namer* namer)
      : f_(field), style_(style), out_(out), namer_(namer) {}

  void run() {
    std::size_t i = 0;
    while (i < f_.size()) {
      std::size_t gap = 0;
      while (i < f_.size() && is_space(f_[i])) {
        ++i;
        ++gap;
      }
      if (i >= f_.size()) break;
      // Aligned columns ("2:03:04  time:") end a key that never got its value.
      if (gap >= 2 && style_ == metric_style::kv && !explicit_) reset();
      std::size_t end = i;
      while (end < f_.size() && !is_space(f_[end]))
        ++end;
      i = token(i, end);
    }
  }

 private:
  void reset() {
    key_begin_ = key_end_ = 0;
    explicit_ = false;
    words_ = 0;
  }
  bool has_key() const { return key_end_ > key_begin_; }

  void emit(std::string_view key, double v, std::string_view unit) {
    if (!std::isfinite(v)) return;
    std::optional<metric_naming> local;
    const metric_naming* n = nullptr;
    if (namer_ != nullptr) {
      n = namer_->find(key, unit);
    } else if ((local = name_metric(key, unit))) {
      n = &*local;
    }
    if (n == nullptr) return;
    for (const auto& e : out_) {
      if (e.name == n->name) return;
    }
    out_.push_back(metric{n->name, n->apply(v)});
  }

  // A value token: emits it with the pending key (or its unit alone) when there is one.
  // Returns false when the token is not a number.
  bool value(std::string_view key, std::string_view tok, std::size_t& next_token_end,
             std::size_t tok_end) {
    const std::string_view core = trim_token(tok);
    std::size_t len = 0;
    const auto v = leading_number(core, len);
    if (!v) return false;
    std::string_view unit = attached_unit(core.substr(len));
    if (unit.empty() && len == core.size()) {
      // "7023.45 ms": the unit is the next token.
      std::size_t j = tok_end;
      if (j < f_.size() && f_[j] == ' ') {
        ++j;
        std::size_t e = j;
        while (e < f_.size() && !is_space(f_[e]))
          ++e;
        const std::string_view next = trim_token(f_.substr(j, e - j));
        if (unit_word(next)) {
          unit = next;
          next_token_end = e;
        }
      }
    }
    emit(key, *v, unit);
    return true;
  }

  std::size_t token(std::size_t b, std::size_t e) {
    const std::string_view t = f_.substr(b, e - b);
    std::size_t next = e;
    // key=value
    if (const std::size_t eq = t.find('='); eq != std::string_view::npos && eq > 0) {
      if (eq + 1 < t.size()) value(t.substr(0, eq), t.substr(eq + 1), next, e);
      reset();
      return next;
    }
    // key:value (but not a clock time such as 2:03:04)
    if (const std::size_t c = t.find(':'); c != std::string_view::npos && c > 0 &&
                                           c + 1 < t.size() && t[c + 1] != ':' &&
                                           !(is_digit(t[c - 1]) && is_digit(t[c + 1]))) {
      if (value(t.substr(0, c), t.substr(c + 1), next, e)) {
        reset();
        return next;
      }
    }
    // key: (the value follows)
    if (t.back() == ':' && t.size() > 1) {
      if (!has_key() || explicit_) key_begin_ = b;
      key_end_ = e - 1;
      explicit_ = true;
      std::size_t len = 0;
      if (leading_number(trim_token(t.substr(0, t.size() - 1)), len)) {
        reset();  // "100:" after "iter": a counter, not a key
      }
      return next;
    }
    const std::string_view key = has_key() && (explicit_ || style_ == metric_style::spaced)
                                     ? f_.substr(key_begin_, key_end_ - key_begin_)
                                     : std::string_view{};
    if (value(key, t, next, e)) {
      reset();
      return next;
    }
    // A number that is not a quantity ("40/100" after "step", a clock time, a version) ends any
    // key before it and is no part of the next one: "step 40/100 loss 2.0" holds loss = 2.
    if (is_digit(trim_token(t).empty() ? 'x' : trim_token(t).front())) {
      reset();
      return next;
    }
    // A word: part of the next key.  After "key:" a word means the value was not a number; a
    // parenthesised word ("(step)") is an aside, not part of a key.
    if (explicit_ || (t.front() == '(' && t.back() == ')')) reset();
    if (t.front() == '(' && t.back() == ')') return next;
    if (!has_key() || ++words_ > 6) {
      key_begin_ = b;
      words_ = 1;
    }
    key_end_ = e;
    return next;
  }

  std::string_view f_;
  metric_style style_;
  std::vector<metric>& out_;
  metric_namer* namer_;
  std::size_t key_begin_ = 0;
  std::size_t key_end_ = 0;
  bool explicit_ = false;
  int words_ = 0;
};

}  // namespace

void scan_metrics(std::string_view text, metric_style style, std::vector<metric>& out,
                  metric_namer* namer) {
  // Bytes that may separate fields, looked up in a table: this loop sees every byte of a line.
  static constexpr auto kMaybeCut = [] {
    std::array<bool, 256> t{};
    for (const char c : std::string_view("|\t;{},-"))
      t[static_cast<unsigned char>(c)] = true;
    return t;
  }();
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    if (i < text.size()) {
      const char c = text[i];
      if (!kMaybeCut[static_cast<unsigned char>(c)]) continue;
      if (c == ',' && thousands_comma(text, i)) continue;
      // Keras: " - loss: 0.5 - accuracy: 0.9"; a dash elsewhere is part of a word or number.
      if (c == '-' && !(i > 0 && text[i - 1] == ' ' && i + 1 < text.size() && text[i + 1] == ' '))
        continue;
    }
    if (i > start) field_walker(text.substr(start, i - start), style, out, namer).run();
    start = i + 1;
  }
}

}  // namespace joules::steps
