// Progress bars.  A bar is a training step counter only when it counts iterations of a training
// loop; bars for downloads, checkpoint shards, dataset map/filter/tokenize and evaluation loops
// look the same and must not become steps.  Examples (sources in docs/step-formats.md):
//   Hugging Face Trainer    5%|▌         | 50/1000 [00:10<03:20,  4.75it/s]
//   Lightning               Epoch 0:  10%|█         | 100/1000 [00:10<01:30, 10.00it/s, loss=2.3]
//   torchtune               1|25|Loss: 1.234:   4%|▍         | 25/625 [00:10<04:00,  2.50it/s]
//   not training            Loading checkpoint shards:  50%|█████     | 2/4 [00:03<00:03, 1.6s/it]
//   not training            Map: 100%|██████████| 1000/1000 [00:00<00:00, 9.8e+03 examples/s]
//   Lightning (rich)        Epoch 0/9  ━━━━━━━━━━━━━ 100/1000 0:00:10 • 0:01:30 10.00it/s loss: 2.3
//   Keras 3                 100/1875 ━━━━━━━━━━━━━━━━━━━━ 1s 2ms/step - accuracy: 0.8 - loss: 0.5
//   Keras 2                 100/1875 [====>.........................] - ETA: 10s - loss: 0.5

#include <array>
#include <utility>

#include "steps/field_words.hpp"
#include "steps/formats.hpp"
#include "steps/scan.hpp"

namespace joules::steps {
namespace {

constexpr std::string_view kHeavyBar = "\xe2\x94\x81";  // ━, rich and Keras 3

// Descriptions of bars that are not a training loop.
constexpr std::array<std::string_view, 14> kEvalWords = {
    "valid",  "eval",  "test",      "predict", "sanity", "inference", "infer",
    "metric", "score", "benchmark", "generat", "sampl",  "decod",     "val "};
constexpr std::array<std::string_view, 36> kOtherWords = {
    "load",    "download", "fetch", "map",    "filter", "token",  "shard",    "process", "convert",
    "extract", "resolv",   "cast",  "sav",    "writ",   "upload", "group",    "pack",    "comput",
    "concat",  "flatten",  "sort",  "shuffl", "split",  "creat",  "build",    "compil",  "index",
    "read",    "copy",     "cach",  "apply",  "prepar", "warm",   "calibrat", "quantiz", "export"};
constexpr std::array<std::string_view, 7> kTrainWords = {"train", "step",  "iteration", "iter",
                                                         "batch", "epoch", "fit"};

template <std::size_t N>
bool any_word(std::string_view s, const std::array<std::string_view, N>& words) {
  for (const auto w : words) {
    if (contains_ci(s, w)) return true;
  }
  return false;
}

std::string_view trim_desc(std::string_view d) {
  while (!d.empty() && (is_space(d.back()) || d.back() == ':'))
    d.remove_suffix(1);
  return d;
}

void set_phase(match& m, std::string_view format) {
  m.kind = line_kind::phase_begin;
  m.phase = "eval";
  m.format = format;
}

// YOLO-style table rows ("  1/100      3.2G    0.05 ...   640: 100%|███| 7/7 [...]"): the row's
// first column is the epoch, printed "e/E", and the bar counts the batches of that epoch.
// Returns the epoch from 0 and the number of epochs; "0/299" counts from 0, "1/100" from 1.
std::optional<std::pair<std::uint64_t, std::uint64_t>> row_epoch(std::string_view desc,
                                                                 format_state& st) {
  cursor c(desc);
  c.skip_spaces();
  std::uint64_t e = 0;
  std::optional<std::uint64_t> last;
  if (!c.fraction(e, last) || !last || e > *last || !is_space(c.peek())) return std::nullopt;
  c.skip_spaces();
  if (c.done()) return std::nullopt;  // a column of its own, not a row
  if (!st.row_epoch_base) st.row_epoch_base = e == 0 ? 0 : 1;
  const std::uint64_t base = *st.row_epoch_base;
  return std::pair{e >= base ? e - base : 0, base == 0 ? *last + 1 : *last};
}

// "Epoch 3" at the start of a description: Lightning's per-epoch bar.
std::optional<std::uint64_t> epoch_prefix(std::string_view desc) {
  cursor c(desc);
  if (!c.eat("Epoch ")) return std::nullopt;
  return c.uint();
}

// A bar by its description: training (with the counter it shows), evaluation, or neither.
bool classify(std::string_view desc, std::uint64_t n, std::uint64_t total, std::string_view postfix,
              format_state& st, match& m) {
  m.step = n;
  m.total = total;
  m.metrics_text = postfix;
  m.kind = line_kind::step;
  if (desc.empty()) {  // Hugging Face Trainer and Accelerate scripts
    m.format = "hf_trainer";
    if (st.untitled_total ? *st.untitled_total != total : st.phase == "eval") {
      set_phase(m, "hf_trainer");
    } else {
      st.untitled_total = total;
      // The Trainer's bar counts the whole run; a loop's own `tqdm(loader)` restarts every
      // epoch with the same total, and the count goes on.
      m.goes_on = true;
    }
    return true;
  }
  cursor tt(desc);  // torchtune: "{epoch}|{global step}|Loss: {loss}"
  if (tt.uint() && tt.eat('|')) {
    if (const auto g = tt.uint(); g && tt.eat('|')) {
      m.format = "torchtune";
      m.step = *g;
      m.total.reset();
      m.metrics_text = tt.rest();
      return true;
    }
  }
  // "Class  Images  Labels  P  R  mAP@.5 ...": YOLO's validation bar.
  if (any_word(desc, kEvalWords) || desc.find("mAP") != std::string_view::npos) {
    set_phase(m, contains_ci(desc, "dataloader") ? "lightning" : "tqdm");
    // A described evaluation bar at 100 % ends the evaluation (Lightning prints no result line).
    if (n >= total) m.kind = line_kind::phase_end;
    m.metrics_text = {};
    return true;
  }
  m.format = "tqdm";
  if (any_word(desc, kOtherWords)) {
    m.kind = line_kind::none;
    m.metrics_text = {};
    return true;
  }
  if (const auto e = epoch_prefix(desc)) {
    m.format = postfix.find("reduced_train_loss") != std::string_view::npos ? "nemo" : "lightning";
    m.per_epoch = true;
    m.epoch = *e;
    // "Epoch 1/2: 100%|███| 100/100": a loop's own bar over its epochs, printed "e/E" as YOLO's
    // rows are; Lightning prints no number of epochs.
    cursor ep(desc);
    ep.eat("Epoch ");
    std::uint64_t first = 0;
    std::optional<std::uint64_t> of;
    if (ep.fraction(first, of) && of && first <= *of && *of < (std::uint64_t{1} << 32)) {
      m.format = "tqdm";
      if (!st.row_epoch_base) st.row_epoch_base = first == 0 ? 0 : 1;
      m.epoch = first >= *st.row_epoch_base ? first - *st.row_epoch_base : 0;
      m.epochs = *st.row_epoch_base == 0 ? *of + 1 : *of;
    }
    // Lightning 1.x also advances the epoch bar through validation batches.
    if (st.phase == "eval") {
      m.kind = line_kind::none;
      m.metrics_text = {};
    }
    return true;
  }
  // Old Hugging Face scripts: an outer "Epoch" bar over an inner "Iteration" bar that restarts.
  if (desc == "Epoch" || desc == "Epochs" || desc == "epoch" || desc == "epochs") {
    if (n == 0 || (st.epoch_bar && n < *st.epoch_bar)) st.epoch_bar_back = true;
    st.epoch_bar = n;
    m.kind = line_kind::none;
    m.metrics_text = {};
    return true;
  }
  if (desc == "Iteration") {
    m.per_epoch = true;
    return true;
  }
  if (const auto e = row_epoch(desc, st)) {
    m.per_epoch = true;
    m.epoch = e->first;
    m.epochs = e->second;
    return true;
  }
  if (!any_word(desc, kTrainWords)) {  // an unknown loop: not a step
    m.kind = line_kind::none;
    m.metrics_text = {};
    return true;
  }
  // A training bar that restarts every epoch: the count goes on ("190/190" in the second epoch
  // is step 380).
  m.goes_on = true;
  return true;
}

// A bar at 0 that names epochs: an outer loop over the epochs begins, a new run.  Out of line:
// rare, and kept off the path of every bar.
[[gnu::noinline]] void note_epochs_bar(std::string_view body, format_state& st) {
  if (contains_ci(body, "epoch")) st.epoch_bar_back = true;
}

// A training bar before its first iteration ("0/870") has not done a step yet.
bool classify_bar(std::string_view desc, std::uint64_t n, std::uint64_t total,
                  std::string_view postfix, format_state& st, match& m) {
  classify(desc, n, total, postfix, st, m);
  if (m.kind == line_kind::step && n == 0 && m.format != "torchtune") {
    m.kind = line_kind::none;
    m.metrics_text = {};
  }
  return true;
}

bool match_tqdm(std::string_view body, std::size_t pct, format_state& st, match& m) {
  std::size_t q = pct;
  while (q > 0 && is_digit(body[q - 1]))
    --q;
  if (q == pct) return false;
  const std::string_view desc = trim_desc(body.substr(0, q));
  const std::string_view after = body.substr(pct + 2);
  const std::size_t bar_end = after.find('|');
  if (bar_end == std::string_view::npos) return false;
  cursor c(after, bar_end + 1);
  c.skip_spaces();
  m.format = "tqdm";
  const auto n = c.uint();
  if (!n) return false;
  // "4.98G/4.98G", "1.00k/1.00k": bytes or scaled counts, a download.
  if (c.peek() != '/') return true;
  c.advance();
  const auto total = c.uint();
  if (!total) return true;
  if (c.peek() != ' ' && c.peek() != '[' && c.peek() != '\0') return true;
  // "[00:10<03:20,  4.75it/s, loss=2.3]": training loops count iterations.
  const std::string_view stats = c.rest();
  const std::size_t comma = stats.find(',');
  if (comma == std::string_view::npos) return true;
  std::size_t r = comma + 1;
  while (r < stats.size() && is_space(stats[r]))
    ++r;
  std::size_t re = r;
  while (re < stats.size() && stats[re] != ',' && stats[re] != ']')
    ++re;
  const std::string_view rate = stats.substr(r, re - r);
  // "it/s", "s/it", or a unit the loop names ("4.42batch/s", tqdm's unit="batch"); not bytes,
  // examples or tokens (data), nor epochs ("231.64s/epoch": the bar over the epochs).
  std::string_view unit;
  if (const std::size_t per_s = rate.rfind("/s"); per_s != std::string_view::npos) {
    std::size_t u = per_s;
    while (u > 0 && is_alpha(rate[u - 1]))
      --u;
    unit = rate.substr(u, per_s - u);
  } else if (const std::size_t s_per = rate.find("s/"); s_per != std::string_view::npos) {
    unit = rate.substr(s_per + 2);
  }
  if (unit_of_bar(unit) != bar_unit::iterations) return true;
  std::string_view postfix = stats.substr(re);
  // A metrics dict printed right after the bar, on the same line (the Hugging Face Trainer's log
  // dict when the output is a file): its metrics are this step's.
  if (const std::size_t close = postfix.rfind(']');
      close != std::string_view::npos && postfix.find('{', close) == std::string_view::npos) {
    postfix = postfix.substr(0, close);
  }
  if (*n == 0) note_epochs_bar(body, st);
  return classify_bar(desc, *n, *total, postfix, st, m);
}

// rich (Lightning's RichProgressBar) and Keras 3 draw the bar with ━; Keras 2 with [===>...].
bool match_heavy_or_keras(std::string_view body, format_state& st, match& m) {
  cursor c(body);
  std::uint64_t n = 0;
  std::optional<std::uint64_t> total;
  if (is_digit(body[0])) {  // Keras: "N/M" first
    if (!c.fraction(n, total)) return false;
    // A dataset of unknown length: "694/Unknown - 8s 15ms/step - loss: 0.3081".
    if (!total && c.eat("/Unknown - ") && st.keras_epoch) {
      m.format = "keras";
      m.kind = line_kind::step;
      m.step = n;
      m.metrics_text = c.rest();
      return true;
    }
    if (!total || !c.eat(' ')) return false;
    const std::string_view rest = c.rest();
    const bool bar = rest.substr(0, kHeavyBar.size()) == kHeavyBar ||
                     (rest.size() > 1 && rest[0] == '[' &&
                      (rest[1] == '=' || rest[1] == '.' || rest[1] == '>')) ||
                     rest.substr(0, 2) == "- ";
    if (!bar) return false;
    m.format = "keras";
    if (!st.keras_epoch || (st.keras_total && *st.keras_total != *total)) {
      set_phase(m, "keras");  // model.evaluate() / predict(): no epoch header, another total
      return true;
    }
    st.keras_total = total;
    m.kind = line_kind::step;
    m.step = n;
    m.total = total;
    m.per_epoch = true;
    m.epoch = st.keras_epoch;
    const std::size_t close = rest.find(']');
    m.metrics_text =
        rest[0] == '[' && close != std::string_view::npos ? rest.substr(close + 1) : rest;
    return true;
  }
  // rich: "DESC ━━━━ N/M elapsed • remaining rate metrics"
  const std::size_t bar = body.find(kHeavyBar);
  if (bar == std::string_view::npos) return false;
  std::size_t after = bar;
  while (body.substr(after, kHeavyBar.size()) == kHeavyBar)
    after += kHeavyBar.size();
  c.seek(after);
  c.skip_spaces();
  if (!c.fraction(n, total) || !total) return false;
  std::string_view desc = trim_desc(body.substr(0, bar));
  if (const std::size_t slash = desc.find('/');
      epoch_prefix(desc) && slash != std::string_view::npos) {
    // "Epoch 0/9": the epoch of max_epochs - 1
    cursor last(desc, slash + 1);
    if (const auto e = last.uint(); e && *e < 1000000) m.epochs = *e + 1;
    desc = desc.substr(0, slash);
  }
  std::string_view postfix = c.rest();
  if (const std::size_t rate = postfix.find("it/s"); rate != std::string_view::npos) {
    postfix = postfix.substr(rate + 4);
  }
  classify_bar(desc, n, *total, postfix, st, m);
  if (m.kind == line_kind::step && m.format == "tqdm") {
    m.kind = line_kind::none;
    m.metrics_text = {};
  }
  return true;
}

}  // namespace

bool match_bar(std::string_view body, format_state& st, match& m) {
  if (const std::size_t pct = body.find("%|"); pct != std::string_view::npos) {
    return match_tqdm(body, pct, st, m);
  }
  if (body.find(kHeavyBar) != std::string_view::npos ||
      (is_digit(body[0]) && body.find('/') != std::string_view::npos)) {
    return match_heavy_or_keras(body, st, m);
  }
  return false;
}

}  // namespace joules::steps
