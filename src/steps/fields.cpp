#include "steps/fields.hpp"

#include <algorithm>

#include "steps/field_keys.hpp"
#include "steps/field_words.hpp"
#include "steps/scan.hpp"

namespace joules::steps {
namespace {

// What may stand before a message's first word: "| valid on ...", "====> Validation loss: 1.95".
constexpr std::string_view kLeadMarks = " \t|[=>*#";

constexpr std::uint64_t kFnvBasis = 1469598103934665603ULL;
constexpr std::uint64_t kFnvPrime = 1099511628211ULL;

void mix(std::uint64_t& h, char c) {
  h = (h ^ static_cast<unsigned char>(c)) * kFnvPrime;
}

struct scanner {
  std::string_view s;
  line_fields& out;
  // Only to learn whether the message may hold a counter (may_hold_counter): no template, no
  // description, and done at the first field that could count.
  bool light = false;
  bool counts = false;
  std::uint8_t ints = 0;
  bool quantity = false;  // a whole number with a unit
  bool space = false;
  // The message's words, for its description.
  bool metric = false;
  bool loss_unmarked = false;
  bool eval_word = false;
  bool eval_metric = false;   // "val_loss", "Validation-accuracy", "test-auc": joined to a metric
  bool eval_pending = false;  // such a name, until its value ("eval_loss": null has none)
  bool train_word = false;
  bool results = false;
  bool top_word = false;
  std::size_t first_word = 0;
  std::size_t words = 0;
  word_class prev_word = word_class::none;
  char prev_sep = ' ';

  void word(std::string_view w, char sep_before) {
    if (eq_ci(w, "nan") || eq_ci(w, "inf")) {  // "loss = nan" is a value
      out.float_values = true;
      eval_metric = eval_metric || eval_pending;
      return;
    }
    eval_pending = false;
    const word_class c = class_of_word(w);
    const bool joined = sep_before == '_' || sep_before == '-' || sep_before == '/' ||
                        sep_before == '\'' || sep_before == '.';
    switch (c) {
      case word_class::loss_like:
        metric = true;
        if ((joined || sep_before == ' ') && prev_word == word_class::eval) {
          eval_pending = true;  // "val_loss", "Validation-accuracy", "val loss 2.06"
        } else {
          loss_unmarked = true;
        }
        break;
      case word_class::metric:
        metric = true;
        if (joined && prev_word == word_class::eval) eval_pending = true;
        break;
      case word_class::eval:
        eval_word = true;
        break;
      case word_class::train:
        train_word = true;
        metric = true;  // CatBoost's "learn: 0.657", LightGBM's "train's l2:0.095"
        break;
      case word_class::notice:
        out.notice = true;
        break;
      case word_class::resume:
        out.notice = true;
        out.resume = true;
        break;
      case word_class::results:
        results = true;
        break;
      case word_class::other_loop:
        out.other_loop = true;
        break;
      case word_class::top:
        top_word = true;
        break;
      case word_class::none:
        break;
    }
    if (c != word_class::none || !joined) prev_word = c;
  }

  void add_field(std::size_t start, std::size_t end, std::uint64_t value,
                 std::optional<std::uint64_t> total, std::size_t total_end) {
    const std::uint8_t index = ints++;
    if (out.count >= line_fields::kMaxFields) return;
    field& f = out.fields[out.count++];
    f = field{};
    f.value = value;
    f.total = total;
    f.pos = static_cast<std::uint16_t>(std::min<std::size_t>(start, 0xffff));
    f.index = index;
    const auto [key, qualifier, prev, before_prev, bracket] = key_before(s, start);
    // "Score at iteration 185 is 0.16" (DL4J): a value reported at a step is a step line, where
    // "Saving checkpoint at step 500" mentions one.
    const word_class reported = class_of_word(before_prev);
    const bool mention = is_mention_word(prev) && reported != word_class::metric &&
                         reported != word_class::loss_like;
    std::string_view after = key_after(s, total ? total_end : end);
    // "finished 998 iteration": the word after names the counter when the one before does not.
    if (!total && unsized_bar_count(s, start, end)) {
      f.place = field_place::bar;
      f.role = field_role::step;
    } else if (!key.empty() && !after.empty() && role_of_key(key) == field_role::none) {
      f.key = after;
      f.role = role_of_key(after);
      f.place = field_place::keyed;
      if (is_mention_word(trim_key(key))) f.not_training = true;
    } else if (!key.empty()) {
      f.key = key;
      f.role = role_of_key(key);
      f.place = bracket ? field_place::bracket : field_place::keyed;
      // "global step 1", "Training Step: 8": the word before a bare step key.
      if (f.role == field_role::step && eq_ci(prev, "global")) f.role = field_role::global;
      if (mention || is_other_loop_key(prev)) f.not_training = true;
      // "|    n_updates        | 99       |" (Stable-Baselines3): the updates so far.
      if (f.role == field_role::none && drawn_row(s) && counted_updates(trim_key(key)))
        f.role = field_role::global;
      if (is_other_loop_key(trim_key(key)) || is_other_loop_key(qualifier)) f.not_training = true;
      if (is_other_loop_key(qualifier)) eval_word = true;
    } else if (!after.empty()) {
      f.key = after;
      f.role = role_of_key(after);
      f.place = field_place::keyed;
    } else if (const bar_unit unit = total ? bar_count(s, start, total_end) : bar_unit::none;
               unit != bar_unit::none) {
      f.place = field_place::bar;
      // "Epoch:  33%|███▎      | 1/3": the outer bar over epochs.
      std::string_view desc = s.substr(0, s.rfind("%|", start));
      // "Epoch:  33%|███▎      | 1/3" counts epochs; "Epoch 4:  78%|...| 977/1259" counts the
      // batches of epoch 4.  First the percentage, then what names the bar.
      while (!desc.empty() && is_digit(desc.back()))
        desc.remove_suffix(1);
      while (!desc.empty() && (is_space(desc.back()) || desc.back() == ':'))
        desc.remove_suffix(1);
      std::size_t w = desc.size();
      while (w > 0 && is_alpha(desc[w - 1]))
        --w;
      f.role = is_epoch_word(desc.substr(w)) || unit == bar_unit::epochs ? field_role::epoch
                                                                         : field_role::step;
    } else if (end < s.size() && is_alpha(s[end])) {
      // "202mory": digits glued to a word that is no unit are part of a name, not a count.
    } else if (start == 0 || (start <= 4 && bracket && s.front() == '[') ||
               alone_in_opening(s, start, end)) {
      // "(1) loss = 0.5": a counter in the parenthesis that opens the message, as in brackets;
      // "| 1     | 2.931 |" (Turi Create): alone in the first cell of a drawn table's row.
      f.place = start == 0 ? field_place::leading : field_place::bracket;
    } else if (bracket) {
      f.place = field_place::bracket;
    }
    // What the learner could take (counter_learner.cpp, score_of) or needs (an epoch).
    counts = counts || f.role == field_role::step || f.role == field_role::global ||
             f.role == field_role::epoch || (f.total && !f.key.empty()) ||
             (f.key.empty() && f.place != field_place::other && f.place != field_place::keyed);
    // "[1,  2000] loss: 2.214" (the PyTorch CIFAR-10 tutorial): two counters in the bracket that
    // opens the message are the outer loop and the inner one, an epoch and its batch.
    if (f.role == field_role::none && f.key.empty() && !f.total && out.count == 2) {
      field& e = out.fields[0];
      if (e.role == field_role::none && e.key.empty() && !e.total && e.index == 0 && index == 1 &&
          e.place == field_place::bracket && e.pos <= 4 && s.front() == '[') {
        std::size_t k = e.pos;
        while (k < start && is_digit(s[k]))
          ++k;
        std::size_t between = 0;
        for (; k < start; ++k)
          between += s[k] == ',' ? 1u : s[k] == ' ' ? 0u : 2u;
        if (between == 1 && end < s.size() && s[end] == ']') {
          e.role = field_role::epoch;
          f.role = field_role::step;
          f.place = field_place::after_epoch;
        }
      }
    }
    // "Epoch  1, 12900/37527", "Train Epoch: 0 [ 64/109468 (0%)]": a counter right after the
    // epoch is that epoch's batch (or sample) count.
    if (f.role == field_role::none && f.key.empty() && out.count >= 2) {
      const field& e = out.fields[out.count - 2];
      if (e.role == field_role::epoch && e.index + 1 == index) {
        std::size_t between = 0;
        for (std::size_t k = e.pos; k < start; ++k) {
          if (is_digit(s[k]) || key_gap(s[k]) || s[k] == ',' || s[k] == ']' || s[k] == '/')
            continue;
          ++between;
        }
        if (between == 0) {
          f.role = field_role::step;
          f.place = field_place::after_epoch;
          f.not_training = e.not_training;  // "Epoch(val) [1][50/50]"
        }
      }
    }
  }

  void number(std::size_t& i) {
    eval_metric = eval_metric || eval_pending;
    eval_pending = false;
    const std::size_t start = i;
    const std::size_t n = s.size();
    std::size_t j = i;
    std::uint64_t v = 0;
    bool overflow = false;
    while (j < n && is_digit(s[j])) {
      const auto d = static_cast<std::uint64_t>(s[j] - '0');
      if (v > (UINT64_MAX - d) / 10) overflow = true;
      v = v * 10 + d;
      ++j;
    }
    // Thousands separators: "965,843", "1,052,108".
    if (j - start <= 3) {
      while (j + 3 < n + 0 && s[j] == ',' && is_digit(s[j + 1]) && is_digit(s[j + 2]) &&
             is_digit(s[j + 3]) && (j + 4 >= n || !is_digit(s[j + 4]))) {
        for (std::size_t k = j + 1; k < j + 4; ++k)
          v = v * 10 + static_cast<std::uint64_t>(s[k] - '0');
        j += 4;
      }
    }
    bool whole = true;
    bool skip = false;  // not a field: a clock time, a date, a version, an exponent's number
    if (j + 1 < n && s[j] == '.' && is_digit(s[j + 1])) {
      whole = false;
      j += 1;
      while (j < n && is_digit(s[j]))
        ++j;
      while (j + 1 < n && s[j] == '.' && is_digit(s[j + 1])) {  // 1.2.3
        skip = true;
        j += 1;
        while (j < n && is_digit(s[j]))
          ++j;
      }
    }
    if (j < n && (s[j] == 'e' || s[j] == 'E')) {
      std::size_t k = j + 1;
      if (k < n && (s[k] == '-' || s[k] == '+')) ++k;
      if (k < n && is_digit(s[k])) {
        whole = false;
        j = k;
        while (j < n && is_digit(s[j]))
          ++j;
      }
    }
    if (j + 1 < n && s[j] == ':' && is_digit(s[j + 1])) {  // 12:54:33, 0:00:29
      skip = true;
      while (j + 1 < n && (s[j] == ':' || s[j] == '.') && is_digit(s[j + 1])) {
        ++j;
        while (j < n && is_digit(s[j]))
          ++j;
      }
    }
    std::optional<std::uint64_t> total;
    std::size_t total_end = j;
    std::size_t range_end = 0;
    // In brackets, a range may pad its end: CNTK's "Minibatch[   1-  10, 0.00%]".
    const bool in_brackets = whole && !skip && j < n && s[j] == '-' && opens_bracket(s, start);
    std::size_t dash_end = j + 1;
    while (in_brackets && dash_end < n && s[dash_end] == ' ' && dash_end - j < 8)
      ++dash_end;
    if (whole && !skip && dash_end < n && s[j] == '-' && is_digit(s[dash_end])) {
      // "683-1364batch" and "Batch [0-100]" are ranges of steps; "2021-07-17" a date.
      std::size_t k = dash_end;
      std::uint64_t w = 0;
      while (k < n && is_digit(s[k]) && k - dash_end < 19)
        w = w * 10 + static_cast<std::uint64_t>(s[k++] - '0');
      const bool range_next =
          (k < n && is_alpha(s[k])) || (in_brackets && (k >= n || (s[k] != '-' && s[k] != '.')));
      if (range_next && w >= v) {
        range_end = k;
        v = w;
      } else {
        skip = true;
      }
      j = k;
      while (j + 1 < n && s[j] == '-' && is_digit(s[j + 1])) {
        ++j;
        while (j < n && is_digit(s[j]))
          ++j;
      }
    }
    if (whole && !skip && !range_end) {
      // "N/M", also "122/  250000" and "200/ 2323".
      std::size_t k = j;
      while (k < n && s[k] == ' ' && k - j < 3)
        ++k;
      if (k < n && s[k] == '/') {
        ++k;
        while (k < n && s[k] == ' ' && k - j < 6)
          ++k;
        if (k < n && is_digit(s[k])) {
          std::uint64_t t = 0;
          std::size_t m = k;
          while (m < n && is_digit(s[m]) && m - k < 19)
            t = t * 10 + static_cast<std::uint64_t>(s[m++] - '0');
          if (m >= n || s[m] != '.' || m + 1 >= n || !is_digit(s[m + 1])) {
            total = t;
            total_end = m;
            j = m;
          }
        }
      }
    }
    // "Epoch[ 1 of 10]", "step 5 of 100": a total in words.
    if (whole && !skip && !range_end && !total && s.substr(j, 4) == " of " && j + 4 < n &&
        is_digit(s[j + 4])) {
      std::size_t m = j + 4;
      std::uint64_t t = 0;
      while (m < n && is_digit(s[m]) && m - j < 23)
        t = t * 10 + static_cast<std::uint64_t>(s[m++] - '0');
      if (m >= n || (s[m] != '.' && !is_alpha(s[m]))) {
        total = t;
        total_end = m;
        j = m;
      }
    }
    // A unit right after the number ("58s", "6736Mb") makes it a quantity, not a counter.
    std::size_t u = j;
    while (u < n && is_alpha(s[u]))
      ++u;
    const std::string_view unit = s.substr(j, u - j);
    const std::size_t number_end = j;
    const bool unsized_bar =
        whole && !skip && !total && !range_end && unit == "it" && unsized_bar_count(s, start, j);
    mix(out.template_hash, '#');
    // "161ms/step" and "2s/step" share a template: a unit is part of the masked number.
    if (!unit.empty() && unit_word(unit) && !range_end) {
      j = u;
      quantity = true;  // "train_time:17555ms": a measured value, as a float is
    }
    const bool percent = j < n && s[j] == '%';
    if (percent) ++j;
    if (!whole) {
      out.float_values = true;
      // Only a name the vocabulary does not know ("loss", "test-auc" are metrics already).
      if (!light && prev_word != word_class::metric && prev_word != word_class::loss_like &&
          prev_word != word_class::eval && !(out.named_values && (eval_metric || !eval_word))) {
        const int named = value_named(s, start, eval_word);
        out.named_values = out.named_values || named == 1;
        eval_metric = eval_metric || named == 2;
      }
      for (std::size_t k = start; k < j; ++k)
        mix(out.value_hash, s[k]);
      mix(out.value_hash, ' ');
    } else if (!skip && !overflow && unsized_bar) {
      add_field(start, number_end, v, total, total_end);
    } else if (!skip && !overflow && !percent && (unit.empty() || !unit_word(unit) || range_end)) {
      add_field(start, range_end ? range_end : j, v, total, total_end);
    }
    i = j;
  }

  void run() {
    out.count = 0;
    if (light) {
      first_word = s.find_first_not_of(kLeadMarks);
    } else {
      out = line_fields{};
    }
    out.template_hash = kFnvBasis;
    out.value_hash = kFnvBasis;
    const std::size_t n = s.size();
    std::size_t i = 0;
    while (i < n) {
      if (light && counts) return;
      const char c = s[i];
      if (light && is_alpha(c)) {
        std::size_t e = i;
        while (e < n && (is_alpha(s[e]) || (is_digit(s[e]) && e > i)))
          ++e;
        // A resume says so in words; an evaluation's results may open with one.
        if ((c == 'r' || c == 'R') && class_of_word(s.substr(i, e - i)) == word_class::resume)
          counts = true;
        if (i == first_word && class_of_word(s.substr(i, e - i)) == word_class::eval) counts = true;
        i = e;
        continue;
      }
      if (is_digit(c)) {
        // Digits inside a name ("loss_x16", "mAP50", "b782") are part of the name.
        if (i > 0 && (is_alpha(s[i - 1]) || s[i - 1] == '_')) {
          mix(out.template_hash, c);
          ++i;
          continue;
        }
        number(i);
        space = false;
        prev_sep = '#';
        continue;
      }
      if (is_alpha(c)) {
        std::size_t e = i;
        while (e < n && (is_alpha(s[e]) || (is_digit(s[e]) && e > i)))
          ++e;
        word(s.substr(i, e - i), prev_sep);
        // "[valid]" (Marian), "valid on 'valid' subset" (fairseq), a quoted evaluation word
        // ("mode": "val"), a message that opens with one ("Validation-accuracy", "Test set:",
        // "eval step 100") and one that labels the values after it ("Epoch 0, validation:
        // ctc_loss=1.52", icefall; not "val: n/a" among training values): the line reports an
        // evaluation.
        if (prev_word == word_class::eval) {
          const std::string_view w = s.substr(i, e - i);
          const bool quoted = i > 0 && (s[i - 1] == '"' || s[i - 1] == '\'') && e < n &&
                              s[e] == s[i - 1];  // {"mode": "val", ...} (MMCV's JSON log)
          const bool label = e - i >= 4 && s.substr(e, 2) == ": " && i >= 2 && s[i - 2] == ',';
          // A cell of its own: "Epoch 5 | Validation | Elapsed Time: 0:00:27 | Steps: 176"
          // (DeepSpeech, Coqui STT).
          std::size_t before = i;
          while (before > 0 && s[before - 1] == ' ')
            --before;
          std::size_t after = e;
          while (after < n && s[after] == ' ')
            ++after;
          const bool cell = before > 0 && s[before - 1] == '|' && after < n && s[after] == '|';
          // Right after the count it reports at: "Step    100: eval  CategoryCrossEntropy |
          // 4.50655540" (Trax).
          const bool at_count = i >= 3 && s[i - 1] == ' ' && s[i - 2] == ':' && is_digit(s[i - 3]);
          if (words == 0 || quoted || label || cell || at_count ||
              (i > 0 && s[i - 1] == '[' && e < n && s[e] == ']') ||
              (eq_ci(w, "valid") && s.substr(e, 3) == " on")) {
            out.eval_tag = true;
          }
        }
        ++words;
        for (std::size_t k = i; k < e; ++k)
          mix(out.template_hash, s[k]);
        i = e;
        space = false;
        prev_sep = 'a';
        continue;
      }
      if (is_space(c)) {
        if (!space) mix(out.template_hash, ' ');
        space = true;
        prev_sep = ' ';
        ++i;
        continue;
      }
      // A bar's drawing ("[====>.....]", "━━━━━", "|███▍      |") changes from line to line:
      // one mark in the template, whatever its length; tqdm's, between "%|" and "|", whatever
      // it holds (it is all blanks at 0 %).
      if (c == '|' && i > 0 && s[i - 1] == '%') {
        const std::size_t close = s.find('|', i + 1);
        if (close != std::string_view::npos && close - i <= 256) {
          mix(out.template_hash, '|');
          mix(out.template_hash, '~');
          mix(out.template_hash, '|');
          space = false;
          prev_sep = '|';
          i = close + 1;
          continue;
        }
      }
      const auto u = static_cast<unsigned char>(c);
      if (u >= 0x80 || c == '=' || c == '>' || c == '#' || c == '.' || c == '-') {
        std::size_t e = i;
        while (e < n && (static_cast<unsigned char>(s[e]) >= 0x80 || s[e] == '=' || s[e] == '>' ||
                         s[e] == '#' || s[e] == '.' || s[e] == '-'))
          ++e;
        if (u >= 0x80 || e - i >= 3) {
          mix(out.template_hash, '~');
          space = false;
          prev_sep = c;
          i = e;
          continue;
        }
      }
      mix(out.template_hash, c);
      space = false;
      prev_sep = c;
      ++i;
    }
    out.metric_values = metric && (out.float_values || quantity || ints > out.count);
    out.eval_values = eval_metric;
    out.eval_word = eval_word;
    // ESPnet2's "1epoch results: [train] ... [valid] loss=2.387": an epoch's results with
    // validation among them.
    if (results && eval_word) out.eval_tag = true;
    out.train_values = train_word || loss_unmarked;
    describe();
  }

  void describe() {
    std::string_view m = s;
    while (!m.empty() && kLeadMarks.find(m.front()) != std::string_view::npos && m.front() != '[')
      m.remove_prefix(1);
    while (!m.empty() && (is_space(m.back()) || m.back() == '|'))
      m.remove_suffix(1);
    static constexpr std::string_view kEvalStarts[] = {
        "[valid", "[val]",      "[eval", "[test",    "valid",   "validation",
        "eval",   "evaluation", "test:", "test set", "testing", "val "};
    for (const auto p : kEvalStarts) {
      if (starts_with_ci(m, p)) out.eval_tag = true;
    }
    if (contains_ci(m, "[valid]") || contains_ci(m, "valid on")) out.eval_tag = true;
    // Lightning's "Epoch 3, global step 1500: 'val_loss' was not in top 1".
    if (contains_ci(m, "not in top")) out.notice = true;
    // A YAML line or a table row: one key, one number, nothing else ("training_iteration: 84",
    // "|    iterations           | 18        |").
    if (out.count == 1 && ints == 1 && !out.float_values &&
        out.fields[0].place == field_place::keyed && out.fields[0].key.data() != nullptr) {
      const field& f = out.fields[0];
      const std::size_t first = s.find_first_not_of(" \t|\"'");
      const auto key_at = static_cast<std::size_t>(f.key.data() - s.data());
      std::size_t end = f.pos;
      while (end < s.size() && is_digit(s[end]))
        ++end;
      bool row = key_at == first && key_at + f.key.size() <= f.pos;
      for (std::size_t k = key_at + f.key.size(); row && k < f.pos; ++k)
        row = key_gap(s[k]);
      for (std::size_t k = end; row && k < s.size(); ++k)
        row = is_space(s[k]) || s[k] == '|' || s[k] == ',' || s[k] == '"';
      out.record_row = row;
      out.table_row = row && drawn_row(s);
    }
  }
};

}  // namespace

void read_fields(std::string_view message, line_fields& out) {
  scanner sc{message, out};
  sc.run();
}

bool may_hold_counter(std::string_view message, line_fields& scratch) {
  scanner sc{message, scratch};
  sc.light = true;
  sc.run();
  return sc.counts;
}

}  // namespace joules::steps
