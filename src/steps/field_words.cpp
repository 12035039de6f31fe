#include "steps/field_words.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "steps/scan.hpp"

namespace joules::steps {
namespace {

enum : std::uint16_t {
  kStep = 1,     // names a step counter: step, iter, update, batch, minibatch, tick, round, "Up."
  kEpoch = 2,    // epoch, epochs, ep
  kSample = 4,   // samples, images, sentences, tokens, kimg: data, not steps
  kMention = 8,  // "at step 500", "from iteration 3"
  kOtherLoop = 16,     // "eval step 100", "warmup step 5", "Iter(val)"
  kGlobalPrefix = 32,  // global_step, total_step, current_steps, num_updates, training_iteration
  kStepPrefix = 64,    // train_step, cur_iter, opt_step, trainer/step
};

struct entry {
  std::string_view word;  // lower case
  word_class cls = word_class::none;
  std::uint16_t flags = 0;
};

using wc = word_class;

// One table for every word the field reader knows, sorted for a binary search: a log line has
// tens of words and each is looked up once.
constexpr auto kVocabulary = [] {
  std::array<entry, 148> t = {{
      {"acc", wc::loss_like},
      {"accuracy", wc::loss_like},
      {"after", wc::none, kMention},
      {"at", wc::none, kMention},
      {"auc", wc::metric},
      {"batch", wc::none, kStep},
      {"batches", wc::none, kStep},
      {"before", wc::none, kMention},
      {"caching", wc::other_loop},
      {"casting", wc::other_loop},
      {"checkpoint", wc::notice},
      {"checkpoints", wc::notice},
      {"compiling", wc::other_loop},
      {"consumed", wc::none, kSample},
      {"converting", wc::other_loop},
      {"cost", wc::metric},
      {"cur", wc::none, kStepPrefix},
      {"current", wc::none, kGlobalPrefix},
      {"dev", wc::eval},
      {"download", wc::other_loop},
      {"downloading", wc::other_loop},
      {"elapsed", wc::metric},
      {"entropy", wc::metric},
      {"ep", wc::none, kEpoch},
      {"epoch", wc::none, kEpoch},
      {"epochs", wc::none, kEpoch},
      {"episode", wc::none, kStep},
      {"err", wc::metric},
      {"error", wc::metric},
      {"eval", wc::eval, kOtherLoop},
      {"evaluation", wc::eval, kOtherLoop},
      {"every", wc::none, kMention},
      {"examples", wc::none, kSample},
      {"extracting", wc::other_loop},
      {"fetching", wc::other_loop},
      {"filter", wc::other_loop},
      {"frames", wc::none, kSample},
      {"from", wc::none, kMention},
      {"generating", wc::other_loop},
      {"global", wc::none, kGlobalPrefix},
      {"grad", wc::metric},
      {"images", wc::none, kSample},
      {"imgs", wc::none, kSample},
      {"inference", wc::other_loop},
      {"instances", wc::none, kSample},
      {"iou", wc::metric},
      {"mlogloss", wc::metric},  // XGBoost's metric names
      {"ndcg", wc::metric},
      {"aucpr", wc::metric},
      {"mape", wc::metric},
      {"rmsle", wc::metric},
      {"iter", wc::none, kStep},
      {"iteration", wc::none, kStep},
      {"iterations", wc::none, kStep},
      {"iters", wc::none, kStep},
      {"itn", wc::none, kStep},
      {"kimg", wc::metric, kSample},
      {"l1", wc::metric},
      {"l2", wc::metric},
      {"learn", wc::train},
      {"learning", wc::loss_like},
      {"loading", wc::notice},
      {"logloss", wc::metric},
      {"loss", wc::loss_like},
      {"lr", wc::loss_like},
      {"mae", wc::metric},
      {"map", wc::metric},
      {"merror", wc::metric},
      {"minibatch", wc::none, kStep},
      {"minibatches", wc::none, kStep},
      {"mse", wc::metric},
      {"nimg", wc::none, kSample},
      {"norm", wc::metric},
      {"num", wc::none, kGlobalPrefix},
      {"nupdates", wc::none, kStep},
      {"of", wc::none, kMention},
      {"opt", wc::none, kStepPrefix},
      {"optimizer", wc::none, kStepPrefix},
      {"per", wc::none, kMention},
      {"perplexity", wc::metric},
      {"ppl", wc::metric},
      {"preprocessing", wc::other_loop},
      {"rate", wc::metric},
      {"resolving", wc::other_loop},
      {"restart", wc::resume},
      {"restarting", wc::resume},
      {"restored", wc::resume},
      {"restoring", wc::resume},
      {"results", wc::results},
      {"resume", wc::resume},
      {"resumed", wc::resume},
      {"resuming", wc::resume},
      {"reward", wc::metric},
      {"rmse", wc::metric},
      {"round", wc::none, kStep},
      {"rounds", wc::none, kStep},
      {"sample", wc::none, kSample},
      {"samples", wc::none, kSample},
      {"sampling", wc::other_loop},
      {"sanity", wc::eval, kOtherLoop},
      {"saved", wc::notice},
      {"saving", wc::notice},
      {"scanning", wc::other_loop},
      {"score", wc::metric},
      {"sec", wc::metric},
      {"seconds", wc::metric},
      {"sen", wc::none, kSample},
      {"sentences", wc::none, kSample},
      {"sents", wc::none, kSample},
      {"seqs", wc::none, kSample},
      {"sequences", wc::none, kSample},
      {"shards", wc::other_loop},
      {"since", wc::none, kMention},
      {"snapshot", wc::notice},
      {"snapshotting", wc::notice},
      {"speed", wc::metric},
      {"step", wc::none, kStep},
      {"steps", wc::none, kStep},
      {"stopping", wc::notice},  // "stopping_early: wallclock_cap ... step:1312/20000"
      {"test", wc::eval, kOtherLoop},
      {"testing", wc::eval, kOtherLoop},
      {"tick", wc::none, kStep},
      {"time", wc::metric},
      {"timesteps", wc::none, kSample},
      {"to", wc::none, kMention},
      {"tok", wc::none, kSample},
      {"tokenizer", wc::other_loop},
      {"top", wc::top},
      {"tokenizing", wc::other_loop},
      {"tokens", wc::none, kSample},
      {"total", wc::none, kGlobalPrefix},
      {"tps", wc::metric},
      {"tree", wc::none, kStep},
      {"train", wc::train, kStepPrefix},
      {"trainer", wc::none, kStepPrefix},
      {"training", wc::train, kGlobalPrefix},
      {"until", wc::none, kMention},
      {"up", wc::none, kStep},
      {"update", wc::none, kStep},
      {"updates", wc::none, kStep},
      {"uploading", wc::other_loop},
      {"val", wc::eval, kOtherLoop},
      {"valid", wc::eval, kOtherLoop},
      {"validation", wc::eval, kOtherLoop},
      {"warmup", wc::other_loop, kOtherLoop},
      {"words", wc::none, kSample},
      {"writing", wc::notice},
      {"xent", wc::metric},
  }};
  std::sort(t.begin(), t.end(), [](const entry& a, const entry& b) { return a.word < b.word; });
  return t;
}();

constexpr std::uint32_t kFnv32Basis = 2166136261U;
constexpr std::uint32_t kFnv32Prime = 16777619U;
constexpr std::size_t kSlots = 512;  // a power of two, about four times the vocabulary

// Open addressing over the vocabulary, built at compile time: a word is found (or not) in one
// or two probes, which a log's every word can afford.
constexpr auto kSlotTable = [] {
  std::array<std::int16_t, kSlots> slots{};
  for (auto& x : slots)
    x = -1;
  for (std::size_t i = 0; i < kVocabulary.size(); ++i) {
    std::uint32_t h = kFnv32Basis;
    for (const char c : kVocabulary[i].word)
      h = (h ^ static_cast<unsigned char>(c)) * kFnv32Prime;
    std::size_t slot = h & (kSlots - 1);
    while (slots[slot] != -1)
      slot = (slot + 1) & (kSlots - 1);
    slots[slot] = static_cast<std::int16_t>(i);
  }
  return slots;
}();

const entry* lookup(std::string_view w) {
  std::array<char, 16> lower{};
  if (w.empty() || w.size() > lower.size()) return nullptr;
  std::uint32_t h = kFnv32Basis;
  for (std::size_t i = 0; i < w.size(); ++i) {
    lower[i] = to_lower(w[i]);
    h = (h ^ static_cast<unsigned char>(lower[i])) * kFnv32Prime;
  }
  const std::string_view key(lower.data(), w.size());
  for (std::size_t slot = h & (kSlots - 1); kSlotTable[slot] != -1;
       slot = (slot + 1) & (kSlots - 1)) {
    const entry& e = kVocabulary[static_cast<std::size_t>(kSlotTable[slot])];
    if (e.word == key) return &e;
  }
  return nullptr;
}

bool has(std::string_view w, std::uint16_t flags) {
  const entry* e = lookup(w);
  return e != nullptr && (e->flags & flags) != 0;
}

}  // namespace

bool eq_ci(std::string_view a, std::string_view b) {
  return a.size() == b.size() && starts_with_ci(a, b);
}

std::string_view trim_key(std::string_view k) {
  while (!k.empty() && (k.back() == '.' || k.back() == '-' || k.back() == '/'))
    k.remove_suffix(1);
  while (!k.empty() && (k.front() == '.' || k.front() == '-' || k.front() == '/'))
    k.remove_prefix(1);
  return k;
}

field_role role_of_key(std::string_view raw) {
  const std::string_view key = trim_key(raw);
  if (key.empty() || !is_alpha(key.front())) return field_role::none;
  const std::size_t first_sep = key.find_first_of("_/");
  if (first_sep == std::string_view::npos) {
    if (eq_ci(key, "globalstep")) return field_role::global;
    const entry* e = lookup(key);
    if (e == nullptr) return field_role::none;
    if ((e->flags & kStep) != 0) return field_role::step;
    if ((e->flags & kEpoch) != 0) return field_role::epoch;
    if ((e->flags & kSample) != 0) return field_role::samples;
    return field_role::none;
  }
  const std::string_view first = key.substr(0, first_sep);
  const std::string_view last = key.substr(key.find_last_of("_/") + 1);
  if (has(last, kStep)) {
    // "g_step 2000, step 152": g for global.
    if (contains_ci(key, "global") || has(first, kGlobalPrefix) || (eq_ci(first, "g")))
      return field_role::global;
    if (has(first, kStepPrefix | kStep)) return field_role::step;
    return field_role::none;  // warmup_steps, save_steps, max_iter, n_updates, log_step
  }
  if (has(last, kSample) || has(first, kSample)) return field_role::samples;
  if (has(last, kEpoch) && (eq_ci(first, "cur") || eq_ci(first, "current")))
    return field_role::epoch;
  return field_role::none;
}

word_class class_of_word(std::string_view w) {
  if (w.size() < 2 || w.size() > 13) return word_class::none;  // no known word is longer
  const entry* e = lookup(w);
  return e != nullptr ? e->cls : word_class::none;
}

bool unit_word(std::string_view w) {
  return w == "s" || w == "ms" || w == "us" || w == "m" || w == "h" || w == "min" || w == "k" ||
         w == "K" || w == "M" || w == "G" || w == "B" || w == "Mb" || w == "MB" || w == "GB" ||
         w == "GiB" || w == "MiB" || w == "KB" || w == "x" || w == "it" || w == "d";
}

bool names_counter(std::string_view w) {
  return has(w, kStep | kEpoch | kSample);
}

int value_named(std::string_view s, std::size_t start, bool evals) {
  std::size_t i = start;
  if (i > 0 && s[i - 1] == '-') --i;
  bool sign = false;  // ':' or '='
  std::size_t gap = 0;
  while (i > 0 && gap < 4 && (is_space(s[i - 1]) || s[i - 1] == ':' || s[i - 1] == '=')) {
    sign = sign || s[i - 1] == ':' || s[i - 1] == '=';
    --i;
    ++gap;
  }
  if (gap == 0) return 0;
  const std::size_t e = i;
  while (i > 0 && (is_alnum(s[i - 1]) || s[i - 1] == '_') && e - i < 32)
    --i;
  while (i < e && !is_alpha(s[i]))
    ++i;
  if (i == e || (i > 0 && is_alnum(s[i - 1]))) return 0;
  if (!sign) {
    if (e - i < 2 || eq_ci(s.substr(i, e - i), "version")) return 0;
    for (std::size_t k = i; k < e; ++k) {
      if (s[k] >= 'A' && s[k] <= 'Z') return 0;
    }
  }
  if (!evals) return 1;
  // The name's first word, or the word before it.
  std::size_t w = i;
  while (w < e && is_alpha(s[w]))
    ++w;
  // "val: 10.85" beside "loss train: 10.81" (LitGPT) is left as it was: no quantity named.
  if (class_of_word(s.substr(i, w - i)) == word_class::eval) return 0;
  std::size_t b = i;
  while (b > 0 && (s[b - 1] == ' ' || s[b - 1] == '-'))
    --b;
  std::size_t a = b;
  while (a > 0 && is_alpha(s[a - 1]))
    --a;
  return class_of_word(s.substr(a, b - a)) == word_class::eval ? 2 : 1;
}

bool is_epoch_word(std::string_view w) {
  return has(w, kEpoch);
}

bool is_mention_word(std::string_view w) {
  return has(w, kMention);
}

bool is_other_loop_key(std::string_view w) {
  return has(w, kOtherLoop);
}

// The message with its numbers as # (steps/fields.hpp), and the names of field roles: the text
// joules steps --explain shows.
std::string template_text(std::string_view message) {
  std::string t;
  t.reserve(message.size());
  bool space = false;
  const std::size_t n = message.size();
  for (std::size_t i = 0; i < n; ++i) {
    const char c = message[i];
    if (is_digit(c) && !(i > 0 && (is_alpha(message[i - 1]) || message[i - 1] == '_'))) {
      while (i + 1 < n && is_digit(message[i + 1]))
        ++i;
      // 1.5, 1,052,108, 12:54:33 and 1e-05 are one number each.
      while (i + 2 < n &&
             (message[i + 1] == '.' || message[i + 1] == ',' || message[i + 1] == ':') &&
             is_digit(message[i + 2])) {
        i += 2;
        while (i + 1 < n && is_digit(message[i + 1]))
          ++i;
      }
      if (i + 2 < n && (message[i + 1] == 'e' || message[i + 1] == 'E') &&
          (is_digit(message[i + 2]) || ((message[i + 2] == '-' || message[i + 2] == '+') &&
                                        i + 3 < n && is_digit(message[i + 3])))) {
        i += 2;
        while (i + 1 < n && is_digit(message[i + 1]))
          ++i;
      }
      t += '#';
      space = false;
      continue;
    }
    if (is_space(c)) {
      if (!space) t += ' ';
      space = true;
      continue;
    }
    t += c;
    space = false;
  }
  return t;
}

std::string_view to_string(field_role r) {
  switch (r) {
    case field_role::none:
      return "none";
    case field_role::step:
      return "step";
    case field_role::global:
      return "global step";
    case field_role::epoch:
      return "epoch";
    case field_role::samples:
      return "samples";
  }
  return "none";
}

namespace {

// The unit of a tqdm bar's rate in the bracket that opens `rest` ("[00:10<01:30, 10.00it/s]" is
// "it", "[03:44<00:00,  4.42batch/s" "batch", "[07:43<00:00, 231.64s/epoch]" "epoch"), or empty.
std::string_view bar_rate_unit(std::string_view rest) {
  const std::size_t close = rest.find(']');
  const std::string_view in = rest.substr(0, close);
  const std::size_t comma = in.find(',');
  if (comma == std::string_view::npos) return {};
  std::size_t i = comma + 1;
  while (i < in.size() && (in[i] == ' ' || in[i] == '?' || in[i] == '.' || is_digit(in[i])))
    ++i;
  std::size_t e = i;
  while (e < in.size() && is_alpha(in[e]))
    ++e;
  std::string_view unit = in.substr(i, e - i);
  if (e + 1 < in.size() && in[e] == '/' && in[e + 1] == 's') return unit;  // "10.00it/s"
  if (unit == "s" && e < in.size() && in[e] == '/') {                      // "1.43s/it"
    std::size_t k = e + 1;
    while (k < in.size() && is_alpha(in[k]))
      ++k;
    return in.substr(e + 1, k - e - 1);
  }
  return {};
}

}  // namespace

bar_unit bar_count(std::string_view s, std::size_t start, std::size_t end) {
  if (start > s.size() || end > s.size()) return bar_unit::none;
  std::size_t i = start;
  while (i > 0 && s[i - 1] == ' ')
    --i;
  if (i == 0 || s[i - 1] != '|' || s.rfind("%|", i) == std::string_view::npos)
    return bar_unit::none;
  const std::string_view rest = s.substr(end, 64);
  if (rest.substr(0, 2) != " [") return bar_unit::none;
  return unit_of_bar(bar_rate_unit(rest.substr(2)));
}

bar_unit unit_of_bar(std::string_view unit) {
  // tqdm's default unit, and the units a training loop names (tqdm's unit="batch").
  if (unit == "it" || eq_ci(unit, "batch") || eq_ci(unit, "batches") || eq_ci(unit, "step") ||
      eq_ci(unit, "steps") || eq_ci(unit, "iter") || eq_ci(unit, "iters") || eq_ci(unit, "ba"))
    return bar_unit::iterations;
  if (eq_ci(unit, "epoch") || eq_ci(unit, "epochs")) return bar_unit::epochs;
  return bar_unit::none;  // bytes, examples, tokens, images: data, not a loop's iterations
}

// "Epoch #1: 222it [02:03,  1.79it/s, ...]": tqdm over a loop of unknown length prints its count
// with "it" and no total.  Only a described bar counts: an undescribed one ("21it [00:00,
// 14987.30it/s]") is most often a dataset being read.
bool unsized_bar_count(std::string_view s, std::size_t start, std::size_t end) {
  if (start > s.size() || end > s.size()) return false;
  const std::string_view rest = s.substr(end, 48);
  if (rest.substr(0, 4) != "it [" || bar_rate_unit(rest.substr(4)) != "it") return false;
  std::size_t i = start;
  while (i > 0 && (s[i - 1] == ' ' || s[i - 1] == ':'))
    --i;
  return i > 0;
}

// Whether the number at `start` opens a bracket ("[0-100]", "[   1-  10, 0.00%]").
bool opens_bracket(std::string_view s, std::size_t start) {
  std::size_t i = start;
  while (i > 0 && s[i - 1] == ' ')
    --i;
  return i > 0 && s[i - 1] == '[';
}

// A row of a table drawn with bars: "|    n_updates        | 99       |" (the bar that opens it
// may have been taken for old fairseq's "| " prefix).
bool drawn_row(std::string_view s) {
  std::size_t e = s.size();
  while (e > 0 && is_space(s[e - 1]))
    --e;
  return e > 0 && s[e - 1] == '|';
}

// "n_updates", "n_steps": a count of updates named in a table of training statistics.
bool counted_updates(std::string_view key) {
  if (key.size() < 3 || (key[0] != 'n' && key[0] != 'N') || key[1] != '_') return false;
  return role_of_key(key.substr(2)) == field_role::step;
}

// The word right after a number ("1epoch", "1364batch", "91300 iter", "9280 images"): only a
// word that names a counter counts.
std::string_view key_after(std::string_view s, std::size_t end) {
  std::size_t i = end;
  if (i < s.size() && s[i] == ' ') ++i;
  std::size_t e = i;
  while (e < s.size() && is_alpha(s[e]))
    ++e;
  const std::string_view w = s.substr(i, e - i);
  if (names_counter(w)) return w;
  return {};
}

}  // namespace joules::steps
