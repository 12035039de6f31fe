#pragma once
// The built-in format rules by name, and which of them a parser uses.  Every format written for
// one trainer (nanoGPT's "iter 100: loss ...", Keras' bars, MMEngine's "Epoch(train) [1][..]")
// is a named rule; the general mechanism (steps/counter_learner.hpp) is not a rule and is always
// on.  Turning rules off measures the general mechanism alone on the trainers those rules were
// written from (tests/steps/step_corpus_test.cpp, leave one trainer out) and lets `joules steps
// --explain` say which rule read a line.  Pure.

#include <bitset>
#include <cstdint>
#include <optional>
#include <string_view>

namespace joules::steps {

// In the order docs/step-formats.md lists the formats.  The names are the `format` a parsed line
// reports.
enum class rule : std::uint8_t {
  modded_nanogpt,
  nanogpt,
  nanochat,
  llm_c,
  megatron,
  gpt_neox,
  nemo,
  nanotron,
  deepspeed,
  torchtitan,
  torchtune,
  maxtext,
  litgpt,
  olmo,
  composer,
  hf_trainer,
  tqdm,
  lightning,
  keras,
  mmengine,
  mmcv,
  detectron2,
  timm,
  imagenet,
  fairseq,
  llama2_c,
  char_rnn,
  word_language_model,
  parameter_golf,
  generic,  // "step N" / "iteration: N" with a loss or learning rate on the line
  count_,
};

inline constexpr std::size_t kRuleCount = static_cast<std::size_t>(rule::count_);

std::string_view rule_name(rule r);
// The rule of a format name ("llm.c", "gpt-neox", ...); nullopt for formats that are not
// rules: phases, "custom", the learnt counters.
std::optional<rule> rule_of_format(std::string_view format);

// Which rules a parser uses: all by default.
class rule_set {
 public:
  static rule_set all() { return rule_set(); }
  bool enabled(rule r) const { return !off_.test(static_cast<std::size_t>(r)); }
  void disable(rule r) { off_.set(static_cast<std::size_t>(r)); }
  bool all_enabled() const { return off_.none(); }

  bool operator==(const rule_set&) const = default;

 private:
  std::bitset<kRuleCount> off_;
};

}  // namespace joules::steps
