#include "steps/rules.hpp"

#include <array>

namespace joules::steps {
namespace {

// Indexed by rule; the format names the matchers (steps/formats_*.cpp) report.
constexpr std::array<std::string_view, kRuleCount> kNames = {
    "modded_nanogpt", "nanogpt",    "nanochat",  "llm.c",
    "megatron",       "gpt-neox",   "nemo",      "nanotron",
    "deepspeed",      "torchtitan", "torchtune", "maxtext",
    "litgpt",         "olmo",       "composer",  "hf_trainer",
    "tqdm",           "lightning",  "keras",     "mmengine",
    "mmcv",           "detectron2", "timm",      "imagenet",
    "fairseq",        "llama2.c",   "char-rnn",  "word_language_model",
    "parameter_golf", "generic"};

}  // namespace

std::string_view rule_name(rule r) {
  const auto i = static_cast<std::size_t>(r);
  return i < kNames.size() ? kNames[i] : std::string_view("?");
}

std::optional<rule> rule_of_format(std::string_view format) {
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == format) return static_cast<rule>(i);
  }
  return std::nullopt;
}

}  // namespace joules::steps
