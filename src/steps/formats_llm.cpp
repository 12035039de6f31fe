// Formats of LLM trainers, whose step lines start with a step keyword.  Examples (sources in
// docs/step-formats.md):
//   modded-nanoGPT  step:125/1770 train_time:12345ms step_avg:98.76ms
//   torchtitan      step:  4  loss:  7.62585  grad_norm: 26.6250  memory: 66.91GiB(37.51%)
//   nanoGPT         iter 100: loss 2.3456, time 123.45ms, mfu 45.67%
//   llm.c           step    1/74 | train loss 10.982 | norm 15.2 | lr 3.00e-04 | (7023.45 ms | ...)
//   nanochat        step 00004/21400 (0.02%) | loss: 8.893647 | dt: 989.44ms | tok/sec: 529,882
//   DeepSpeed       step=10, skipped=0, lr=[0.0001], mom=[(0.9, 0.999)]
//   MaxText         completed step: 9, seconds: 5.667, TFLOP/s/device: 134.924, loss: 10.374
//   torchtune       Step 10 | loss:1.23 lr:2e-05 tokens_per_second_per_gpu:1234.5
//   Megatron-LM     iteration      100/   10000 | consumed samples: 800 | lm loss: 5.1E+00 |
//   nanotron        iteration: 991 / 1000 | consumed_tokens: 634K | lm_loss: 9.63 | lr: 1e-05
//   NeMo 2          Training epoch 0, iteration 10/99 | lr: 1.5e-05 | global_step: 10 | ...
//   LitGPT          Epoch 1 | iter 10 step 5 | loss train: 2.345, val: n/a | iter time: 123 ms
//   OLMo            [step=10/739328,epoch=0]   (metrics follow on indented lines)
//   Composer        [epoch=1][batch=10/1000]:  (likewise)

#include "steps/formats.hpp"
#include "steps/scan.hpp"

namespace joules::steps {
namespace {

std::string_view after_spaces(std::string_view s) {
  while (!s.empty() && is_space(s.front()))
    s.remove_prefix(1);
  return s;
}

void set_step(match& m, std::string_view format, std::uint64_t n,
              std::optional<std::uint64_t> total, std::string_view metrics,
              metric_style style = metric_style::kv) {
  m.kind = line_kind::step;
  m.format = format;
  m.step = n;
  m.total = total;
  m.metrics_text = metrics;
  m.style = style;
}

void set_eval_end(match& m, std::string_view format, std::uint64_t n, std::string_view metrics,
                  metric_style style = metric_style::kv) {
  set_step(m, format, n, std::nullopt, metrics, style);
  m.kind = line_kind::phase_end;
  m.phase = "eval";
}

// modded-nanoGPT's validation lines: "step:125/1770 val_loss:3.9012 train_time:..."
bool validation_result(std::string_view rest) {
  return (contains(rest, "val_loss") || contains(rest, "val_bpb")) && !contains(rest, "train_loss");
}

// "step..." in its many spellings.
bool match_step_word(std::string_view body, match& m) {
  cursor c(body);
  if (!c.eat_ci("step")) return false;
  std::uint64_t n = 0;
  std::optional<std::uint64_t> total;
  if (c.eat(':')) {
    const std::size_t pad = c.skip_spaces();
    if (!c.fraction(n, total)) return false;
    const std::string_view rest = c.rest();
    if (pad == 0 && total) {
      set_step(m, "modded_nanogpt", n, total, rest);
      if (validation_result(rest)) set_eval_end(m, "modded_nanogpt", n, rest);
      return true;
    }
    if (contains(rest, "loss:")) {
      set_step(m, "torchtitan", n, total, rest);
      return true;
    }
    return false;
  }
  if (c.eat('=')) {
    const auto v = c.uint();
    if (!v || c.peek() != ',' || !contains(c.rest(), "skipped=")) return false;
    set_step(m, "deepspeed", *v, std::nullopt, c.rest());
    return true;
  }
  if (c.skip_spaces() == 0 || !c.fraction(n, total)) return false;
  if (c.eat(':')) {
    const std::string_view rest = c.rest();
    if (contains(rest, "val loss")) {
      set_eval_end(m, "nanogpt", n, rest, metric_style::spaced);
      return true;
    }
    if (!contains(rest, "loss")) return false;
    set_step(m, contains(rest, "train loss") ? "llm.c" : "generic", n, total, rest,
             metric_style::spaced);
    return true;
  }
  const std::string_view rest = after_spaces(c.rest());
  if (rest.empty()) return false;
  if (total && rest[0] == '|') {
    set_step(m, "llm.c", n, total, rest, metric_style::spaced);
    return true;
  }
  if (total && rest[0] == '(' && contains(rest, "%)")) {
    set_step(m, "nanochat", n, total, rest.substr(rest.find(')') + 1));
    return true;
  }
  if (rest[0] == '|' && body[0] == 'S') {
    // torchtune's StdoutLogger; nanochat prints its evaluations the same way.
    if (contains_ci(rest, "valid") || contains_ci(rest, "eval")) {
      set_eval_end(m, contains(rest, "bpb") ? "nanochat" : "torchtune", n, rest.substr(1));
    } else {
      set_step(m, "torchtune", n, total, rest.substr(1));
    }
    return true;
  }
  return false;
}

// Megatron-LM and its descendants put the iteration between pipes.
bool megatron_at(std::string_view body, std::size_t at, match& m, std::string_view format) {
  cursor c(body, at);
  if (!c.eat("iteration")) return false;
  const bool colon = c.eat(':');
  std::uint64_t n = 0;
  std::optional<std::uint64_t> total;
  if (c.skip_spaces() == 0 || !c.fraction(n, total)) return false;
  c.skip_spaces();
  if (!c.eat('|')) return false;
  set_step(m, colon ? "nanotron" : format, n, total, c.rest());
  return true;
}

bool match_iter_word(std::string_view body, match& m) {
  if (body.substr(0, 9) == "iteration") return megatron_at(body, 0, m, "megatron");
  cursor c(body);
  if (!c.eat("iter")) return false;
  if (c.eat(':')) {  // Detectron2 without its eta: "iter: 19  total_loss: 2.164"
    c.skip_spaces();
    const auto n = c.uint();
    if (!n || !contains(c.rest(), "loss")) return false;
    set_step(m, "detectron2", *n, std::nullopt, c.rest());
    return true;
  }
  if (c.skip_spaces() == 0) return false;
  const auto it = c.uint();
  if (!it) return false;
  if (c.eat(':')) {
    if (contains(c.rest(), "val loss")) {  // LitGPT: "iter 8: val loss 10.8512, val time: ..."
      set_eval_end(m, "litgpt", *it, c.rest(), metric_style::spaced);
      return true;
    }
    set_step(m, "nanogpt", *it, std::nullopt, c.rest(), metric_style::spaced);
    return true;
  }
  // LitGPT before 2024: "iter 76 step 38: loss 10.8259, iter time: 197.87ms", and in March
  // 2024 "iter 1760 | step 220: loss 1.5947, iter time: 263.85 ms (optimizer.step)"
  c.skip_spaces();
  if (c.eat('|')) c.skip_spaces();
  if (!c.eat("step ")) return false;
  const auto s = c.uint();
  if (!s || !c.eat(':')) return false;
  set_step(m, "litgpt", *s, std::nullopt, c.rest(), metric_style::spaced);
  return true;
}

// LitGPT: "Epoch 1 | iter 10 step 5 | loss train: ..." and "Ep 1 | iter 4 | step 1: loss ..."
bool match_litgpt(std::string_view body, match& m) {
  cursor c(body);
  if (!c.eat("Epoch ") && !c.eat("Ep ")) return false;
  if (!c.uint() || !c.eat(" | iter ") || !c.uint()) return false;
  // A LitGPT draft of March 2024 printed "stEp" (Lightning-AI/litgpt PR #1055).
  if (!c.eat(" | ") && !c.eat(' ')) return false;
  if (!c.eat_ci("step ")) return false;
  const auto s = c.uint();
  if (!s) return false;
  std::string_view rest = c.rest();
  while (!rest.empty() && (rest[0] == ':' || rest[0] == ' ' || rest[0] == '|'))
    rest.remove_prefix(1);
  set_step(m, "litgpt", *s, std::nullopt, rest);
  return true;
}

// OLMo "[step=10/739328]", OLMo-core "[step=10/1000,epoch=1,eta=1h]", Composer "[batch=3/9]:".
bool match_bracketed(std::string_view body, format_state& st, match& m) {
  cursor c(body);
  std::uint64_t n = 0;
  std::optional<std::uint64_t> total;
  if (c.eat("[step=")) {
    if (!c.fraction(n, total)) return false;
    if (!total && !c.eat("/???")) return false;
    if (c.peek() != ']' && c.peek() != ',') return false;
    set_step(m, "olmo", n, total, {});
    st.metric_block = "olmo";
    return true;
  }
  if (c.eat("[epoch=")) {
    if (!c.uint() || !c.eat(']')) return false;
  }
  if (c.eat("[Eval batch=") || c.eat("[eval batch=")) {
    // "[Eval batch=33/320] Eval on eval data" is progress; "[eval batch=320/320]:" the result.
    m.kind = body.substr(body.size() - 2) == "]:" ? line_kind::phase_end : line_kind::phase_begin;
    m.phase = "eval";
    m.format = "composer";
    st.metric_block = "composer";
    return true;
  }
  if (!c.eat("[batch=") || !c.fraction(n, total) || !c.eat(']')) return false;
  set_step(m, "composer", n, total, {});
  st.metric_block = "composer";
  return true;
}

bool match_v(std::string_view body, match& m) {
  cursor c(body);
  if (c.eat("validation loss at iteration ")) {  // Megatron-LM's evaluation result
    const auto n = c.uint();
    set_eval_end(m, "megatron", n.value_or(0), c.rest());
    return true;
  }
  if (c.eat("validation loss at ")) {
    set_eval_end(m, "megatron", 0, c.rest());
    return true;
  }
  if (c.eat("val loss ")) {  // llm.c
    set_eval_end(m, "llm.c", 0, body, metric_style::spaced);
    return true;
  }
  return false;
}

}  // namespace

bool match_llm(std::string_view body, format_state& st, match& m) {
  switch (body[0]) {
    case 's':
    case 'S':
      if (body.substr(0, 12) == "samples/sec:") {  // GPT-NeoX puts throughput first
        const std::size_t at = body.find("| iteration ");
        return at != std::string_view::npos && megatron_at(body, at + 2, m, "gpt-neox");
      }
      return match_step_word(body, m);
    case 'i':
      return match_iter_word(body, m);
    case 'c': {
      cursor c(body);
      if (!c.eat("completed step: ")) return false;  // MaxText
      const auto n = c.uint();
      if (!n) return false;
      set_step(m, "maxtext", *n, std::nullopt, c.rest());
      return true;
    }
    case 'T': {
      cursor c(body);
      if (!c.eat("Training epoch ") || !c.uint() || !c.eat(", ")) return false;  // NeMo 2
      const std::size_t at = c.pos();
      if (!megatron_at(body, at, m, "nemo")) return false;
      if (const auto g = find_key_uint(m.metrics_text, "global_step")) m.step = *g;
      return true;
    }
    case 'E':
      return match_litgpt(body, m);
    case '[':
      return match_bracketed(body, st, m);
    case 'v':
      return match_v(body, m);
    default:
      return false;
  }
}

}  // namespace joules::steps
