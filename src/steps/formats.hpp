#pragma once
// The built-in formats.  Each matcher looks at one message (a line after steps/line_prefix has
// removed colour codes, timestamps, levels and rank prefixes) and says what it is as printed;
// step_parser then turns that into a step number, a gap, a restart or a phase with its state.
// Matchers reject cheaply: most look at the first bytes only.  Internal to src/steps.

#include <cstdint>
#include <optional>
#include <string_view>

#include "steps/metrics.hpp"
#include "steps/step_parser.hpp"

namespace joules::steps {

struct match {
  line_kind kind = line_kind::none;
  std::uint64_t step = 0;  // as printed
  std::optional<std::uint64_t> total;
  // Per-epoch counters (Lightning, Keras, timm, MMEngine, the ImageNet example): `step` restarts
  // every epoch and `total` is the number of batches per epoch; `epoch` (0-based) when printed.
  bool per_epoch = false;
  std::optional<std::uint64_t> epoch;
  // The number of epochs of the run, when the line says it (a Keras epoch header, a rich
  // Lightning bar, a printed configuration).
  std::optional<std::uint64_t> epochs;
  // The counter went back because a new epoch began; `step` is already global (learnt
  // counters, steps/counter_learner.hpp).
  bool epoch_rollover = false;
  // A bar that may count one epoch or the whole run: when it restarts with the same total the
  // count goes on, and from then on its lines report the epoch.
  bool goes_on = false;
  bool bar = false;               // a learnt counter or evaluation read from a progress bar
  std::string_view phase;         // phase_begin / phase_end: "eval", "checkpoint"
  std::string_view format;        // set also on lines of kind none that a format recognised
  std::string_view metrics_text;  // the part of the line that holds metrics; empty: none
  metric_style style = metric_style::kv;
};

// What some formats remember between lines.
struct format_state {
  std::string_view phase;  // the phase we are in ("" when training or before it)
  // Untitled tqdm bars (Hugging Face Trainer, Accelerate scripts): the training bar's total;
  // an untitled bar with another total is an evaluation loop.
  std::optional<std::uint64_t> untitled_total;
  // Keras: the epoch of the last "Epoch 3/10" header (0-based) and the training bar's total.
  std::optional<std::uint64_t> keras_epoch;
  std::optional<std::uint64_t> keras_total;
  // An evaluation bar is under way (begun, not at 100 % yet, and drawn within the last few
  // lines): a training bar that advances now counts the evaluation's batches (Lightning 1.x),
  // not training steps.
  bool eval_bar_open = false;
  // A bar over the epochs started again since the training bar last counted (a new run): an
  // outer "Epoch" bar that went back ("Epoch:   0%| | 0/3" after "Epoch:  67%| | 2/3"; its last
  // count is `epoch_bar`), or a bar at 0 whose line names epochs.
  bool epoch_bar_back = false;
  std::uint64_t lines = 0;        // lines (rewrites) read
  std::uint64_t eval_bar_at = 0;  // the line the evaluation bar was last drawn on
  // YOLO-style table rows: whether their epochs count from 0 or 1 (the first row says).
  std::optional<std::uint64_t> row_epoch_base;
  std::optional<std::uint64_t> epoch_bar;
  // OLMo and Composer print a step header, then one metric per indented line.
  std::string_view metric_block;  // the format whose metric lines may follow
};

// Progress bars: tqdm (Hugging Face, Accelerate, Lightning, torchtune, NeMo), rich, Keras.
bool match_bar(std::string_view body, format_state& st, match& m);
// Lines that start with a step keyword: modded-nanoGPT, nanoGPT, llm.c, torchtitan, DeepSpeed,
// MaxText, torchtune, LitGPT, OLMo, Composer, Megatron-LM and its descendants, nanotron, nanochat.
bool match_llm(std::string_view body, format_state& st, match& m);
// MMEngine/MMCV, Detectron2, timm, the PyTorch ImageNet example, fairseq, Hugging Face log
// dicts, Keras epoch headers.
bool match_other(std::string_view body, format_state& st, match& m);
// Any "step N" / "step=N" / "iteration: N" with a loss or learning rate on the same line.
// `names` caches metric names across lines (may be null).
bool match_generic(std::string_view body, match& m, metric_namer* names = nullptr);
// Phase announcements: evaluation and checkpoint starts and ends.
bool match_phase(std::string_view body, match& m);

// The number of epochs a line states outside the step formats: timm's "Scheduled epochs: 300",
// "max_epochs=12" or "max_epochs: 3" in a printed configuration (MMEngine, Lightning, argparse).
std::optional<std::uint64_t> stated_epochs(std::string_view body);

// The unsigned integer after `key` and a separator (":", "=", " ", "\": \"") in `s`, where the
// key starts the text or follows a non-identifier byte.
std::optional<std::uint64_t> find_key_uint(std::string_view s, std::string_view key);

}  // namespace joules::steps
