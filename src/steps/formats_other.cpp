// Formats of vision and general-purpose trainers, and of log dicts.  Examples (sources in
// docs/step-formats.md):
//   MMEngine        Epoch(train)  [1][  50/1000]  lr: 1.0e-02  eta: 1 day, 2:03:04  time: 0.51
//   MMCV 1.x        Epoch [1][50/7330]	lr: 1.990e-03, eta: 1 day, 6:04:40, time: 0.602
//   Detectron2      eta: 0:10:11  iter: 19  total_loss: 2.164  loss_cls: 0.7  lr: 0.00039962
//   timm            Train: 0 [  50/1251 (  4%)]  Loss: 6.939 (6.94)  Time: 5.123s,  49.97/s
//   ImageNet        Epoch: [0][  10/5005]	Time  0.234 ( 0.456)	Loss 6.8e+00 (6.9e+00)
//   fairseq         epoch 001:    100 / 1563 loss=9.764, ppl=869.35, num_updates=100, lr=1.25e-05
//   DeepSpeed       epoch=0/micro_step=100/global_step=10, RunningAvgSamplesPerSec=45.1
//   Hugging Face    {'loss': 2.3, 'grad_norm': 0.8, 'learning_rate': 1.2e-04, 'epoch': 0.1}
//   TF Trainer      {'loss': 18.6387, 'learning_rate': 4.91e-05, 'epoch': 0.0585, 'step': 10}
//   parameter-golf  500/20000 train_loss:2.5 train_time:...   (modded-nanoGPT without "step:")
//   llama2.c        490 | loss 5.7543 | lr 4.900000e-05 | 8060.78ms | mfu 0.21%
//   char-rnn        170/9500 (epoch 0.895), train_loss = 2.84438551, grad/param norm = 1.3e-01
//   word LM         | epoch   1 |   200/ 2323 batches | lr 20.00 | ms/batch 15.86 | loss  6.78

#include "steps/field_words.hpp"
#include "steps/formats.hpp"
#include "steps/scan.hpp"

namespace joules::steps {
namespace {

void set_kind(match& m, line_kind kind, std::string_view format, std::string_view metrics,
              metric_style style = metric_style::kv) {
  m.kind = kind;
  m.format = format;
  m.metrics_text = metrics;
  m.style = style;
  if (kind == line_kind::phase_begin || kind == line_kind::phase_end) m.phase = "eval";
}

// "[ 50/1000]" with spaces allowed inside the brackets.
bool bracket_fraction(cursor& c, std::uint64_t& n, std::optional<std::uint64_t>& total) {
  c.skip_spaces();
  if (!c.eat('[')) return false;
  c.skip_spaces();
  if (!c.fraction(n, total)) return false;
  c.skip_spaces();
  return c.peek() == ']' || c.peek() == '(';
}

void skip_past(cursor& c, char ch) {
  const std::size_t at = c.rest().find(ch);
  c.advance(at == std::string_view::npos ? c.rest().size() : at + 1);
}

// MMEngine "Epoch(train) [1][ 50/1000]" / "Iter(val) [50/500]" and MMCV "Epoch [1][50/7330]".
bool match_mm(std::string_view body, match& m) {
  cursor c(body);
  const bool epoch_based = c.eat("Epoch");
  if (!epoch_based && !c.eat("Iter")) return false;
  std::string_view loop = "train";
  std::string_view format = "mmcv";
  if (c.eat('(')) {
    const std::size_t close = c.rest().find(')');
    if (close == std::string_view::npos) return false;
    loop = c.rest().substr(0, close);
    c.advance(close + 1);
    format = "mmengine";
  } else if (c.peek() != ' ') {
    return false;
  }
  std::uint64_t e = 0;
  std::optional<std::uint64_t> unused;
  if (epoch_based) {
    c.skip_spaces();
    if (!c.eat('[') || !c.fraction(e, unused) || !c.eat(']')) return false;
  }
  std::uint64_t n = 0;
  std::optional<std::uint64_t> total;
  const std::size_t before = c.pos();
  if (!bracket_fraction(c, n, total)) {
    c.seek(before);  // MMCV's validation result: "Epoch(val) [1][500]\tbbox_mAP: ..."
    if (loop == "train") return false;
  }
  skip_past(c, ']');
  const std::string_view rest = c.rest();
  if (loop != "train") {
    set_kind(m, contains(rest, "eta:") ? line_kind::phase_begin : line_kind::phase_end, format,
             rest);
    return true;
  }
  if (!total) return false;
  set_kind(m, line_kind::step, format, rest);
  m.step = n;
  m.total = total;
  if (epoch_based) {
    m.per_epoch = true;
    m.epoch = e > 0 ? e - 1 : 0;  // MMEngine counts epochs from 1
  }
  return true;
}

// timm "Train: 0 [  50/1251 (  4%)]", the ImageNet example "Epoch: [0][ 10/5005]", and their
// evaluation loops "Test: [ 10/196]".
bool match_imagenet_style(std::string_view body, match& m) {
  cursor c(body);
  std::uint64_t n = 0;
  std::optional<std::uint64_t> total;
  if (c.eat("Test: ") || c.eat("Test (EMA): ")) {
    if (!bracket_fraction(c, n, total)) return false;
    set_kind(m, line_kind::phase_begin, contains(body, "\t") ? "imagenet" : "timm", {});
    return true;
  }
  const bool timm = c.eat("Train: ");
  if (!timm && !c.eat("Epoch: ")) return false;
  std::uint64_t e = 0;
  if (timm) {
    // timm: "Train: 0 [" (epoch from 0); OpenPCDet's timm style: "Train:    1/3 ( 33%) ["
    // (epoch from 1, of 3).
    c.skip_spaces();
    std::optional<std::uint64_t> epochs;
    if (!c.fraction(e, epochs)) return false;
    if (epochs) {
      if (*epochs == 0) return false;
      m.epochs = epochs;
      e = e > 0 ? e - 1 : 0;
      c.skip_spaces();
      if (c.eat('(')) skip_past(c, ')');
    }
  } else {
    // "Epoch: [0]" (the ImageNet example, torchvision's references, DeiT) or "Epoch: [0/100]"
    // (DINO): the second number is the number of epochs.
    std::optional<std::uint64_t> epochs;
    if (!c.eat('[') || !c.fraction(e, epochs) || !c.eat(']')) return false;
    if (epochs && *epochs > 0) m.epochs = epochs;
  }
  if (!bracket_fraction(c, n, total) || !total) return false;
  skip_past(c, ']');
  set_kind(m, line_kind::step, timm ? "timm" : "imagenet", c.rest(),
           timm ? metric_style::kv : metric_style::spaced);
  m.step = n;
  m.total = total;
  m.per_epoch = true;
  m.epoch = e;
  return true;
}

// fairseq: "epoch 001:    100 / 1563 loss=...", "epoch 001 | loss 9.1 | ... | num_updates 1563",
// "epoch 001 | valid on 'valid' subset | loss 4.2 | ...".
bool match_fairseq(std::string_view body, match& m) {
  cursor c(body);
  if (!c.eat("epoch ")) return false;
  const auto e = c.uint();
  if (!e) return false;
  if (c.eat(" | ")) {
    if (const std::size_t v = body.find("valid on"); v != std::string_view::npos) {
      // "valid on 'valid' subset | valid loss 1.94" is the result; without the pipe, progress.
      const std::size_t subset = body.find("subset", v);
      const bool result = subset != std::string_view::npos && body.substr(subset + 6, 2) == " |";
      set_kind(m, result ? line_kind::phase_end : line_kind::phase_begin, "fairseq",
               result ? c.rest() : std::string_view{}, metric_style::spaced);
      return true;
    }
    const auto u = find_key_uint(body, "num_updates");
    if (!u) return false;
    set_kind(m, line_kind::step, "fairseq", c.rest(), metric_style::spaced);
    m.step = *u;
    return true;
  }
  c.eat(':');  // fairseq before 0.9 printed "epoch 010  2000 / 8223 loss=..."
  if (c.skip_spaces() == 0) return false;
  std::uint64_t n = 0;
  std::optional<std::uint64_t> total;
  if (!c.fraction(n, total)) return false;
  set_kind(m, line_kind::step, "fairseq", c.rest());
  if (const auto u = find_key_uint(body, "num_updates")) {
    m.step = *u;
  } else if (total) {
    m.step = n;
    m.total = total;
    m.per_epoch = true;
    m.epoch = *e > 0 ? *e - 1 : 0;
  } else {
    return false;
  }
  return true;
}

// The PyTorch word language model example: "| epoch   1 |   200/ 2323 batches | lr 20.00 |
// ms/batch 15.86 | loss  6.78 | ppl   883.54" and "| end of epoch   1 | time: 24.19s | valid
// loss  5.15 | valid ppl   172.34" (the leading "| " is stripped as a separator).
bool match_word_lm(std::string_view body, match& m) {
  cursor c(body);
  if (c.eat("end of epoch ")) {
    const std::size_t bar = body.find('|');
    if (bar == std::string_view::npos || !contains(body, "valid loss")) return false;
    set_kind(m, line_kind::phase_end, "word_language_model", body.substr(bar + 1),
             metric_style::spaced);
    return true;
  }
  if (!c.eat("epoch ")) return false;
  c.skip_spaces();
  const auto e = c.uint();
  if (!e || !c.eat(" |")) return false;
  c.skip_spaces();
  std::uint64_t n = 0;
  std::optional<std::uint64_t> total;
  if (!c.fraction(n, total) || !total || !c.eat(" batches |")) return false;
  set_kind(m, line_kind::step, "word_language_model", c.rest(), metric_style::spaced);
  m.step = n;
  m.total = total;
  m.per_epoch = true;
  m.epoch = *e > 0 ? *e - 1 : 0;
  return true;
}

bool match_lower_e(std::string_view body, match& m) {
  if (body.substr(0, 4) == "eta:") {  // Detectron2
    const std::size_t at = body.find(" iter: ");
    if (at == std::string_view::npos) return false;
    cursor c(body, at + 7);
    const auto n = c.uint();
    if (!n) return false;
    set_kind(m, line_kind::step, "detectron2", body);
    m.step = *n;
    return true;
  }
  if (body.substr(0, 6) == "epoch=") {  // DeepSpeed's throughput timer
    const auto g = find_key_uint(body, "global_step");
    if (!g) return false;
    const std::size_t comma = body.find(',');
    set_kind(m, line_kind::step, "deepspeed",
             comma == std::string_view::npos ? std::string_view{} : body.substr(comma + 1));
    m.step = *g;
    return true;
  }
  return match_fairseq(body, m) || match_word_lm(body, m);
}

// Whether a Python dict holds a whole number under a key that names a step counter other than
// the Trainer's own 'step' ("{'exs': 3616, 'num_updates': 113, ...}").
bool counts_updates(std::string_view body) {
  for (std::size_t at = body.find(": "); at != std::string_view::npos;
       at = body.find(": ", at + 2)) {
    if (at < 3 || body[at - 1] != '\'') continue;
    const std::size_t open = body.rfind('\'', at - 2);
    if (open == std::string_view::npos) continue;
    const std::string_view key = body.substr(open + 1, at - 2 - open);
    if (key == "step") continue;
    const field_role r = role_of_key(key);
    if (r != field_role::step && r != field_role::global) continue;
    cursor c(body, at + 2);
    if (c.uint() && (c.peek() == ',' || c.peek() == '}')) return true;
  }
  return false;
}

// Hugging Face log dicts carry metrics; the step count comes from the progress bar.  fairseq's
// JSON log format carries num_updates.
bool match_dict(std::string_view body, match& m) {
  if (body.size() < 3 || (body[1] != '\'' && body[1] != '"')) return false;
  if (body[1] == '"') {
    if (contains(body, "\"valid_")) {
      set_kind(m, line_kind::phase_end, "fairseq", body);
      m.step = find_key_uint(body, "num_updates").value_or(0);
      return true;
    }
    const auto u = find_key_uint(body, "num_updates");
    if (!u) return false;
    set_kind(m, line_kind::step, "fairseq", body);
    m.step = *u;
    return true;
  }
  const bool eval = body.substr(0, 7) == "{'eval_" || contains(body, ", 'eval_loss'");
  // The Trainer's epoch is a fraction ('epoch': 0.03, 'epoch': 1.0); a dict with a whole epoch
  // ({'epoch': 3, 'train_loss': 0.5}) is another trainer's, whose counters the general mechanism
  // reads.
  if (const std::size_t at = body.find("'epoch': "); !eval && at != std::string_view::npos) {
    cursor c(body, at + 9);
    if (c.uint() && (c.peek() == ',' || c.peek() == '}') && !contains(body, "'step': "))
      return false;
  }
  // A dict that counts its own updates under a key of its own ("'num_updates': 113",
  // "'total_train_updates': 36": ParlAI) is another trainer's too, and no Trainer dict ends
  // an evaluation without an eval_ key.
  if (!eval && counts_updates(body)) return false;
  set_kind(m, eval ? line_kind::phase_end : line_kind::none, "hf_trainer", body);
  // The TensorFlow Trainer has no progress bar: its dicts carry the step.
  if (!eval) {
    if (const std::size_t at = body.find("'step': "); at != std::string_view::npos) {
      cursor c(body, at + 8);
      if (const auto n = c.uint(); n && (c.peek() == ',' || c.peek() == '}')) {
        m.kind = line_kind::step;
        m.step = *n;
      }
    }
  }
  return true;
}

// "500/20000 train_loss:2.5 ..." (parameter-golf and other modded-nanoGPT forks).
bool match_bare_fraction(std::string_view body, match& m) {
  cursor c(body);
  std::uint64_t n = 0;
  std::optional<std::uint64_t> total;
  if (!c.fraction(n, total) || !total) return false;
  // DeepSpeed's throughput timer before 0.8: "0/40, SamplesPerSec=83.48, MemAllocated=0.26GB"
  if (c.eat(", ") && (c.rest().substr(0, 14) == "SamplesPerSec=" ||
                      c.rest().substr(0, 24) == "RunningAvgSamplesPerSec=")) {
    set_kind(m, line_kind::step, "deepspeed", c.rest());
    m.step = *total;
    return true;
  }
  if (!c.eat(' ')) return false;
  c.skip_spaces();
  const std::string_view rest = c.rest();
  // char-rnn and torch-rnn: "170/9500 (epoch 0.895), train_loss = 2.84, grad/param norm = ..."
  if (rest.substr(0, 7) == "(epoch " && contains(rest, "train_loss")) {
    set_kind(m, line_kind::step, "char-rnn", rest.substr(rest.find(')') + 1));
    m.step = n;
    m.total = total;
    return true;
  }
  const bool train = rest.substr(0, 10) == "train_loss" || rest.substr(0, 10) == "train_time";
  const bool val = rest.substr(0, 8) == "val_loss" || rest.substr(0, 7) == "val_bpb";
  if (!train && !val) return false;
  set_kind(m, train ? line_kind::step : line_kind::phase_end, "modded_nanogpt", rest);
  m.step = n;
  m.total = total;
  return true;
}

// llama2.c: "490 | loss 5.7543 | lr 4.900000e-05 | 8060.78ms | mfu 0.21%".
bool match_llama2c(std::string_view body, match& m) {
  cursor c(body);
  const auto n = c.uint();
  if (!n || !c.eat(" | loss ")) return false;
  set_kind(m, line_kind::step, "llama2.c", body.substr(body.find('|') + 1), metric_style::spaced);
  m.step = *n;
  return true;
}

}  // namespace

std::optional<std::uint64_t> stated_epochs(std::string_view body) {
  constexpr std::uint64_t kMaxEpochs = 1000000;
  std::optional<std::uint64_t> n;
  if (const std::size_t at = body.find("Scheduled epochs: "); at != std::string_view::npos) {
    cursor c(body, at + 18);
    n = c.uint();
  } else if (const std::size_t me = body.find("max_epoch"); me != std::string_view::npos) {
    // max_epochs=12, max_epoch=10 (fairseq), 'max_epochs': 3, max_epochs: 3
    cursor c(body, me + 9);
    c.eat('s');
    c.eat('\'') || c.eat('"');
    if (!c.eat('=') && !c.eat(':')) return std::nullopt;
    c.skip_spaces();
    n = c.uint();
  }
  if (!n || *n == 0 || *n > kMaxEpochs) return std::nullopt;  // max_epoch=0: no limit
  return n;
}

bool match_other(std::string_view body, format_state& st, match& m) {
  switch (body[0]) {
    case 'E': {
      // Keras prints "Epoch 3/10" alone before each epoch's progress bar.
      cursor c(body);
      std::uint64_t e = 0;
      std::optional<std::uint64_t> total;
      if (c.eat("Epoch ") && c.fraction(e, total) && total &&
          c.rest().find_first_not_of(' ') == std::string_view::npos) {
        st.keras_epoch = e > 0 ? e - 1 : 0;
        m.epochs = total;
        if (e <= 1) st.keras_total.reset();  // a new fit(): its bars may have another total
        m.format = "keras";
        return true;
      }
      return match_mm(body, m) || match_imagenet_style(body, m);
    }
    case 'I':
      return match_mm(body, m);
    case 'T':
      return match_imagenet_style(body, m);
    case 'e':
      return match_lower_e(body, m);
    case '{':
      return match_dict(body, m);
    case '*': {  // the ImageNet example's evaluation summary: " * Acc@1 76.130 Acc@5 92.862"
      const std::size_t acc = body.find_first_not_of(" *");
      if (acc == std::string_view::npos || body.substr(acc, 4) != "Acc@") return false;
      set_kind(m, line_kind::phase_end, "imagenet", body.substr(acc), metric_style::spaced);
      return true;
    }
    default:
      return is_digit(body[0]) && (match_bare_fraction(body, m) || match_llama2c(body, m));
  }
}

}  // namespace joules::steps
