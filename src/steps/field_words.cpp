#include "steps/field_words.hpp"

#include "steps/scan.hpp"

namespace joules::steps {
namespace {

template <std::size_t N>
bool in_ci(std::string_view w, const std::string_view (&words)[N]) {
  for (const auto x : words) {
    if (eq_ci(w, x)) return true;
  }
  return false;
}

constexpr std::string_view kStepWords[] = {"step",       "steps",  "iter",    "iters",  "iteration",
                                           "iterations", "update", "updates", "up",     "batch",
                                           "batches",    "tick",   "round",   "rounds", "nupdates"};
constexpr std::string_view kEpochWords[] = {"epoch", "epochs", "ep"};
constexpr std::string_view kSampleWords[] = {
    "samples", "sample", "images",    "imgs",      "examples",  "sequences", "seqs",
    "tokens",  "tok",    "sen",       "sents",     "sentences", "words",     "kimg",
    "nimg",    "frames", "timesteps", "instances", "consumed"};
// Prefixes of a compound key that make a step counter the global one ("global_step",
// "num_updates", "current_steps", "training_iteration"), or keep it the training loop's own.
constexpr std::string_view kGlobalPrefixes[] = {"global", "total", "current", "num", "training"};
constexpr std::string_view kStepPrefixes[] = {"train", "cur", "opt", "optimizer", "trainer"};
// "at step 500", "from iteration 3": a step mentioned, not a step line's counter.
constexpr std::string_view kMentionWords[] = {"at",     "from",  "to",    "of",    "after",
                                              "before", "every", "until", "since", "per"};
constexpr std::string_view kOtherLoops[] = {"eval",    "val",    "valid",      "validation", "test",
                                            "testing", "warmup", "evaluation", "sanity"};

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
    if (in_ci(key, kStepWords)) return field_role::step;
    if (in_ci(key, kEpochWords)) return field_role::epoch;
    if (in_ci(key, kSampleWords)) return field_role::samples;
    if (eq_ci(key, "globalstep")) return field_role::global;
    return field_role::none;
  }
  const std::string_view first = key.substr(0, first_sep);
  const std::string_view last = key.substr(key.find_last_of("_/") + 1);
  if (in_ci(last, kStepWords)) {
    if (contains_ci(key, "global") || in_ci(first, kGlobalPrefixes)) return field_role::global;
    if (in_ci(first, kStepPrefixes) || in_ci(first, kStepWords)) return field_role::step;
    return field_role::none;  // warmup_steps, save_steps, max_iter, n_updates, log_step
  }
  if (in_ci(last, kSampleWords) || in_ci(first, kSampleWords)) return field_role::samples;
  if (in_ci(last, kEpochWords) && (eq_ci(first, "cur") || eq_ci(first, "current")))
    return field_role::epoch;
  return field_role::none;
}

word_class class_of_word(std::string_view w) {
  static constexpr std::string_view kLossLike[] = {"loss", "lr", "acc", "accuracy", "learning"};
  static constexpr std::string_view kMetric[] = {
      "auc",  "rmse",    "mse",  "mae",     "error", "err",     "merror",  "ppl",  "perplexity",
      "xent", "entropy", "cost", "reward",  "score", "logloss", "map",     "iou",  "grad",
      "norm", "time",    "sec",  "seconds", "speed", "rate",    "elapsed", "kimg", "tps"};
  static constexpr std::string_view kEval[] = {"val",     "valid", "validation", "eval",  "test",
                                               "testing", "dev",   "evaluation", "sanity"};
  static constexpr std::string_view kTrain[] = {"train", "training", "learn"};
  static constexpr std::string_view kNotice[] = {"checkpoint", "checkpoints", "saving",
                                                 "saved",      "snapshot",    "snapshotting",
                                                 "loading",    "writing"};
  static constexpr std::string_view kResume[] = {"resume",    "resuming", "resumed",   "restored",
                                                 "restoring", "restart",  "restarting"};
  if (w.size() < 2) return word_class::none;
  if (in_ci(w, kLossLike)) return word_class::loss_like;
  if (in_ci(w, kMetric)) return word_class::metric;
  if (in_ci(w, kEval)) return word_class::eval;
  if (in_ci(w, kTrain)) return word_class::train;
  if (in_ci(w, kNotice)) return word_class::notice;
  if (in_ci(w, kResume)) return word_class::resume;
  if (eq_ci(w, "results")) return word_class::results;
  // The loops of data preparation: their bars are not training.
  static constexpr std::string_view kOtherLoop[] = {
      "downloading",   "download",   "map",      "filter",    "tokenizing", "tokenizer",
      "shards",        "resolving",  "casting",  "uploading", "extracting", "converting",
      "preprocessing", "generating", "sampling", "scanning",  "caching",    "compiling",
      "warmup",        "inference",  "fetching"};
  if (in_ci(w, kOtherLoop)) return word_class::other_loop;
  return word_class::none;
}

bool unit_word(std::string_view w) {
  return w == "s" || w == "ms" || w == "us" || w == "m" || w == "h" || w == "min" || w == "k" ||
         w == "K" || w == "M" || w == "G" || w == "B" || w == "Mb" || w == "MB" || w == "GB" ||
         w == "GiB" || w == "MiB" || w == "KB" || w == "x" || w == "it" || w == "d";
}

bool names_counter(std::string_view w) {
  return in_ci(w, kStepWords) || in_ci(w, kEpochWords) || in_ci(w, kSampleWords);
}

bool is_epoch_word(std::string_view w) {
  return in_ci(w, kEpochWords);
}

bool is_mention_word(std::string_view w) {
  return in_ci(w, kMentionWords);
}

bool is_other_loop_key(std::string_view w) {
  return in_ci(w, kOtherLoops);
}

}  // namespace joules::steps
