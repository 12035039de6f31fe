#include "steps/prefilter.hpp"

#include <array>
#include <cstdint>

#include "steps/scan.hpp"

namespace joules::steps {
namespace {

// The words, lower case, by their first letter.  "val" covers valid, validation, val_loss;
// "sav" saving, saved, save; "num_u" fairseq's num_updates; "acc" the ImageNet example's
// "* Acc@1"; "tttg"/"ttp:" parameter-golf's test-time training; "eta" Detectron2's lines;
// "loss" llama2.c's "490 | loss 5.75 | ..."; "snap"/"checkp" checkpoints (Caffe's
// "Snapshotting to", "Checkpoint at step"); "resum"/"restor" resumes, which the learnt counters
// must see even without a number; "ep" (epoch, Marian's "Ep."), "upd"/"up." (updates, Marian's
// "Up. 14000"), "tick" (StyleGAN), "round": the other names the learnt counters know
// (steps/field_words.cpp), "nupd" a count of updates written as one word ("nupdates"), "minib"
// (CNTK's "Minibatch[ 501-1000]"), "itn".
constexpr std::array<std::string_view, 29> kWords = {
    "step",   "iter", "infer", "ep",   "eval",  "eta",  "val",         "sav",  "test",   "train",
    "tttg",   "ttp:", "batch", "acc",  "num_u", "loss", "samples/sec", "snap", "checkp", "resum",
    "restor", "upd",  "up.",   "tick", "round", "nupd", "minib",       "itn",  "tree"};

enum : std::uint8_t {
  kPlain = 0,
  kLetter = 1,     // a letter that starts none of the words
  kWordStart = 2,  // a letter that starts one of them
  kSpecial = 3,    // '%', '{', '/', 0xE2 (the first byte of ━)
  kControl = 4,
};

constexpr std::array<std::uint8_t, 256> kClass = [] {
  std::array<std::uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    const auto ch = static_cast<char>(c);
    if ((c < 0x20 && c != '\t') || c == 0x7f) {
      t[static_cast<std::size_t>(c)] = kControl;
    } else if (is_alpha(ch)) {
      t[static_cast<std::size_t>(c)] = kLetter;
    }
  }
  for (const auto w : kWords) {
    t[static_cast<unsigned char>(w[0])] = kWordStart;
    t[static_cast<unsigned char>(w[0] - 32)] = kWordStart;
  }
  for (const std::size_t c :
       {std::size_t{'%'}, std::size_t{'{'}, std::size_t{'/'}, std::size_t{0xE2}})
    t[c] = kSpecial;
  return t;
}();

bool word_at(std::string_view s, std::size_t i) {
  const char first = to_lower(s[i]);
  for (const auto w : kWords) {
    if (w[0] != first || s.size() - i < w.size()) continue;
    std::size_t k = 1;
    while (k < w.size() && to_lower(s[i + k]) == w[k])
      ++k;
    if (k == w.size()) return true;
  }
  return false;
}

}  // namespace

// A line that opens with a counter: "145: 4.54, 7.31 avg loss" (darknet), "0:\tlearn: 0.65"
// (CatBoost), "    3 7.34 s run", "[0]\ttest-auc:0.89" (XGBoost).  Not a date or a clock
// ("2024-01-02 03:04:05", "12:54:33 ..."), whose lines are read only for what else they hold.
bool opens_with_counter(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && is_space(s[i]))
    ++i;
  // "[900]", "(1) loss", and the first cell of a drawn table's row: "| 1    | 2.931 |".
  const bool cell = i < s.size() && s[i] == '|';
  if (i < s.size() && (s[i] == '[' || s[i] == '(' || cell)) ++i;
  while (cell && i < s.size() && is_space(s[i]))
    ++i;
  const std::size_t d = i;
  while (i < s.size() && is_digit(s[i]))
    ++i;
  if (i == d) return false;
  if (i + 1 < s.size() && (s[i] == '-' || s[i] == ':' || s[i] == '.') && is_digit(s[i + 1]))
    return false;
  return true;
}

bool may_be_step_related(std::string_view s) {
  if (opens_with_counter(s)) return true;
  const std::size_t n = s.size();
  bool after_letter = false;
  for (std::size_t i = 0; i < n; ++i) {
    const char c = s[i];
    switch (kClass[static_cast<unsigned char>(c)]) {
      case kPlain:
        after_letter = false;
        continue;
      case kLetter:
        after_letter = true;
        continue;
      case kWordStart:
        if (!after_letter && word_at(s, i)) return true;
        after_letter = true;
        continue;
      case kControl:
        return true;
      default:  // kSpecial
        after_letter = false;
        if (c == '{') return true;
        if (c == '%') {
          if (i + 1 < n && s[i + 1] == '|') return true;
        } else if (c == '/') {
          // "N/M", also with spaces around the slash (Megatron pads both numbers).
          std::size_t b = i;
          while (b > 0 && is_space(s[b - 1]))
            --b;
          std::size_t a = i + 1;
          while (a < n && is_space(s[a]))
            ++a;
          if (b > 0 && is_digit(s[b - 1]) && a < n && (is_digit(s[a]) || s[a] == 'U')) return true;
          // tqdm's rate, "1.79it/s" or "1.43s/it": a bar, also one of unknown length ("Epoch
          // #1: 222it [02:03,  1.79it/s]").
          if ((i >= 2 && s[i - 2] == 'i' && s[i - 1] == 't' && i + 1 < n && s[i + 1] == 's') ||
              (i >= 1 && s[i - 1] == 's' && i + 2 < n && s[i + 1] == 'i' && s[i + 2] == 't'))
            return true;
        } else if (i + 2 < n && s[i + 1] == '\x94' && s[i + 2] == '\x81') {
          return true;  // ━
        }
        continue;
    }
  }
  return false;
}

}  // namespace joules::steps
