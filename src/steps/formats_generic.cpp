// The catch-all step format (a step counter and a training metric on one line) and phase
// announcements (evaluation, checkpoints).

#include <algorithm>
#include <array>

#include "steps/formats.hpp"
#include "steps/scan.hpp"

namespace joules::steps {
namespace {

constexpr bool key_boundary(char prev) {
  return prev == ' ' || prev == '\t' || prev == '[' || prev == '(' || prev == ',' || prev == '|' ||
         prev == '{' || prev == '\'' || prev == '"' || prev == ':' || prev == ';';
}

// The word before position `at`, lower-cased comparisons done by the caller.
std::string_view word_before(std::string_view s, std::size_t at) {
  std::size_t e = at;
  while (e > 0 && (is_space(s[e - 1]) || s[e - 1] == ':' || s[e - 1] == ','))
    --e;
  std::size_t b = e;
  while (b > 0 && (is_alnum(s[b - 1]) || s[b - 1] == '_'))
    --b;
  return s.substr(b, e - b);
}

bool training_metric(const metric& m) {
  const std::string_view n = m.name;
  return n == "loss" || n == "val_loss" || n == "lr" || n == "grad_norm" || n == "tokens_per_s" ||
         n == "samples_per_s" || n == "step_time_s" || n == "ppl" || n == "perplexity" ||
         (n.size() > 5 && n.substr(n.size() - 5) == "_loss");
}

constexpr std::array<std::string_view, 6> kStepKeys = {"global_step", "num_updates", "iteration",
                                                       "steps",       "step",        "iter"};

constexpr std::array<std::string_view, 17> kEvalBegin = {"***** running evaluation",
                                                         "running evaluation",
                                                         "running validation",
                                                         "validating",
                                                         "evaluating",
                                                         "begin validation",
                                                         "start inference on",
                                                         "starting validation",
                                                         "starting evaluation",
                                                         "starting eval",
                                                         "computing validation",
                                                         "computing evaluation",
                                                         "validation:",
                                                         "evaluation:",
                                                         "running eval",
                                                         "tttg:",
                                                         "ttp:"};
constexpr std::array<std::string_view, 4> kEvalEnd = {"total inference time", "***** eval metrics",
                                                      "evaluation finished", "validation finished"};

}  // namespace

std::optional<std::uint64_t> find_key_uint(std::string_view s, std::string_view key) {
  for (std::size_t at = s.find(key); at != std::string_view::npos; at = s.find(key, at + 1)) {
    if (at > 0 && (is_alnum(s[at - 1]) || s[at - 1] == '_')) continue;
    cursor c(s, at + key.size());
    c.eat('"') || c.eat('\'');
    if (!c.eat(':') && !c.eat('=') && c.peek() != ' ') continue;
    c.skip_spaces();
    c.eat('"') || c.eat('\'');
    if (const auto v = c.uint()) return v;
  }
  return std::nullopt;
}

bool match_generic(std::string_view body, match& m, metric_namer* names) {
  for (std::size_t i = 0; i < body.size(); ++i) {
    const char c0 = to_lower(body[i]);
    if (c0 != 's' && c0 != 'i' && c0 != 'g' && c0 != 'n') continue;
    if (i > 0 && !key_boundary(body[i - 1])) continue;
    for (const auto key : kStepKeys) {
      if (!starts_with_ci(body.substr(i), key)) continue;
      cursor c(body, i + key.size());
      c.eat('"') || c.eat('\'');
      const bool sep = c.eat(':') || c.eat('=') || c.peek() == ' ';
      if (!sep) break;
      c.skip_spaces();
      c.eat('"') || c.eat('\'');
      std::uint64_t n = 0;
      std::optional<std::uint64_t> total;
      if (!c.fraction(n, total)) break;
      // "iter 77 step 39: loss 10.83": with gradient accumulation the iterations count
      // micro-batches and the steps count optimizer steps, the run's steps.
      if ((key == "iter" || key == "iteration") &&
          find_key_uint(body.substr(c.pos()), "step").has_value()) {
        break;
      }
      const std::string_view before = word_before(body, i);
      if (starts_with_ci(before, "warmup") || contains_ci(body, "checkpoint")) return false;
      // "Saving at step 500", "reached at step 10": a step mentioned, not a step line.
      if (before == "at" || before == "from" || before == "to" || before == "of") break;
      // Cheap before reading metrics: a training line names a loss or a learning rate.
      if (!contains_ci(body, "loss") && !contains_ci(body, "lr") &&
          !contains_ci(body, "learning")) {
        return false;
      }
      // "key: value" or "key value": whichever reads more metrics.
      std::vector<metric> metrics;
      std::vector<metric> spaced;
      scan_metrics(body, metric_style::kv, metrics, names);
      scan_metrics(body, metric_style::spaced, spaced, names);
      metric_style style = metric_style::kv;
      if (spaced.size() > metrics.size()) {
        metrics.swap(spaced);
        style = metric_style::spaced;
      }
      bool training = false;
      for (const auto& x : metrics)
        training = training || training_metric(x);
      if (!training) return false;
      bool has_val = false;
      for (const auto& x : metrics)
        has_val = has_val || x.name == "val_loss";
      auto evalish = [](std::string_view w) {
        return starts_with_ci(w, "val") || starts_with_ci(w, "eval") || starts_with_ci(w, "test");
      };
      // A validation loss, beside the training loss or not, reports an evaluation at that step
      // (nanoGPT's "step 250: train loss 1.97, val loss 2.07" beside its "iter 250:" lines).
      const bool eval = evalish(before) || evalish(body) || has_val;
      m.kind = eval ? line_kind::phase_end : line_kind::step;
      if (eval) m.phase = "eval";
      m.step = n;
      m.total = total;
      m.format = "generic";
      m.metrics_text = body;
      m.style = style;
      return true;
    }
  }
  return false;
}

bool match_phase(std::string_view body, match& m) {
  for (const auto p : kEvalBegin) {
    if (starts_with_ci(body, p)) {
      m.kind = line_kind::phase_begin;
      m.phase = "eval";
      m.format = p[0] == 't' ? "parameter_golf" : "phase";
      return true;
    }
  }
  for (const auto p : kEvalEnd) {
    if (starts_with_ci(body, p)) {
      m.kind = line_kind::phase_end;
      m.phase = "eval";
      m.format = "phase";
      return true;
    }
  }
  // Caffe's "Snapshotting to ...", darkflow's "Checkpoint at step 1800": a checkpoint begins.
  for (const std::string_view p :
       {std::string_view("snapshotting "), std::string_view("checkpoint at "),
        std::string_view("checkpointing ")}) {
    if (starts_with_ci(body, p)) {
      m.kind = line_kind::phase_begin;
      m.phase = "checkpoint";
      m.format = "phase";
      return true;
    }
  }
  // Checkpoints: "Saving checkpoint at 1 epochs", "Saving model checkpoint to ...", "saving
  // checkpoint at iteration 1000", "Epoch 1: saving model to ...", "Finished saving the
  // checkpoint", "successfully saved checkpoint from iteration 1000", "Model weights saved in".
  // The three spellings by plain search: much faster than a case-insensitive scan on long lines.
  std::size_t sav = body.find("sav");
  for (const std::string_view spelling : {std::string_view("Sav"), std::string_view("SAV")}) {
    sav = std::min(sav, body.find(spelling));
  }
  if (sav == std::string_view::npos) return false;
  if (sav > 0 && is_alpha(body[sav - 1])) return false;
  // A save is reported at the start of a message; "... best model saved as best.pt" at the end
  // of YOLO's early-stopping summary reports one made long ago.
  if (sav > 48 && starts_with_ci(body.substr(sav), "saved")) return false;
  const std::string_view word = body.substr(sav);
  const bool saving = starts_with_ci(word, "saving ") || starts_with_ci(word, "save ");
  const bool saved = starts_with_ci(word, "saved ");
  if (!saving && !saved) return false;
  if (!contains_ci(body, "checkpoint") && !contains_ci(body, "model") &&
      !contains_ci(body, "weights") && !contains_ci(body, "state")) {
    return false;
  }
  const std::string_view before = word_before(body, sav);
  if (before == "be" || before == "will" || before == "to") return false;  // "will be saved to"
  // No save at all: "Did not save checkpoint as output_dir is None" (Trax), "won't save",
  // "Skipping saving the model".
  if (before == "not" || before == "Not" || before == "never" || before == "cannot" ||
      before == "t" || starts_with_ci(before, "skip")) {
    return false;
  }
  const bool end = saved || starts_with_ci(before, "finished") || starts_with_ci(before, "done");
  m.kind = end ? line_kind::phase_end : line_kind::phase_begin;
  m.phase = "checkpoint";
  m.format = "phase";
  return true;
}

}  // namespace joules::steps
