// The step parser's logic: formats, prefixes, colour codes and carriage returns, repeats, gaps,
// restarts, phases, metrics and units, custom regexes.  Real trainer output is exercised in bulk
// by tests/steps/step_corpus_test.cpp.

#include "steps/step_parser.hpp"

#include <gtest/gtest.h>

#include <charconv>
#include <optional>
#include <string>
#include <vector>

#include "steps/line_prefix.hpp"
#include "steps/scan.hpp"
#include "util/error.hpp"

namespace joules::steps {
namespace {

std::optional<double> metric_of(const parsed_line& p, std::string_view name) {
  for (const auto& m : p.metrics) {
    if (m.name == name) return m.value;
  }
  return std::nullopt;
}

// The step of one line, parsed alone.
std::optional<std::uint64_t> step_of(std::string_view line) {
  step_parser p;
  const auto r = p.parse(line);
  if (r.kind != line_kind::step) return std::nullopt;
  return r.step;
}

std::string_view format_of(std::string_view line) {
  step_parser p;
  return p.parse(line).format;
}

TEST(StepParser, BuiltInFormats) {
  struct example {
    const char* line;
    std::uint64_t step;
    const char* format;
  };
  const std::vector<example> examples = {
      {"step:1/20000 train_loss:6.9357 train_time:409ms step_avg:409.00ms", 1, "modded_nanogpt"},
      {"500/20000 train_loss:2.6001 train_time:204500ms", 500, "modded_nanogpt"},
      {"490 | loss 5.7543 | lr 4.900000e-05 | 8060.78ms | mfu 0.21%", 490, "llama2.c"},
      {"170/9500 (epoch 0.895), train_loss = 2.84438551, grad/param norm = 1.3375e-01", 170,
       "char-rnn"},
      {"| epoch   1 |   200/ 2323 batches | lr 20.00 | ms/batch 15.86 | loss  6.78", 200,
       "word_language_model"},
      {"{'loss': 18.6387, 'learning_rate': 4.9113474e-05, 'epoch': 0.0585, 'step': 10}", 10,
       "hf_trainer"},
      {"iter 1760 | step 220: loss 1.5947, iter time: 263.85 ms (optimizer.step)", 220, "litgpt"},
      {"iter 100: loss 2.3456, time 123.45ms, mfu 45.67%", 100, "nanogpt"},
      {"step    1/74 | train loss 10.982 | norm 6.3 | lr 3.00e-04 | (1245.98 ms | 6575 tok/s)", 1,
       "llm.c"},
      {"step 00004/21400 (0.02%) | loss: 8.893647 | dt: 989.44ms | tok/sec: 529,882", 4,
       "nanochat"},
      {" iteration      100/   10000 | consumed samples: 800 | lm loss: 5.1E+00 |", 100,
       "megatron"},
      {" samples/sec: 7.799 | iteration       34/   10000 | lm_loss: 1.1E+01 |", 34, "gpt-neox"},
      {"Training epoch 0, iteration 1/99 | lr: 1.5e-05 | global_step: 7 | reduced_train_loss: 11",
       7, "nemo"},
      {"iteration: 991 / 1000 | consumed_tokens: 634K | lm_loss: 9.63 | lr: 1e-05", 991,
       "nanotron"},
      {"[Rank 0] step=10, skipped=0, lr=[0.0001], mom=[(0.9, 0.999)]", 10, "deepspeed"},
      {"epoch=0/micro_step=100/global_step=10, RunningAvgSamplesPerSec=45.1", 10, "deepspeed"},
      {"step: 14  loss:  3.24405  grad_norm:  0.8319  memory:  9.46GiB(64.99%)  tps: 7,282", 14,
       "torchtitan"},
      {"Step 10 | loss:1.23 lr:2e-05 tokens_per_second_per_gpu:1234.5", 10, "torchtune"},
      {"1|25|Loss: 1.234:   4%|▍         | 25/625 [00:10<04:00,  2.50it/s]", 25, "torchtune"},
      {"completed step: 9, seconds: 5.667, TFLOP/s/device: 134.924, loss: 10.374", 9, "maxtext"},
      {"Epoch 1 | iter 8 step 2 | loss train: 10.901, val: n/a | iter time: 119.88 ms (step)", 2,
       "litgpt"},
      {"iter 77 step 39: loss 10.8259, iter time: 215.40ms (optimizer.step)", 39, "litgpt"},
      {"[step=10/739328]", 10, "olmo"},
      {"[step=10/1000,epoch=1,eta=2h3m]", 10, "olmo"},
      {"[epoch=1][batch=10/1000]:", 10, "composer"},
      {"Iter(train) [  50/80000]  lr: 1.0e-02  eta: 1 day, 2:03:04  time: 0.5123  loss: 1.23", 50,
       "mmengine"},
      {"Iter [50/160000]\tlr: 1.000e-02, eta: 2:00:00, time: 0.5, loss: 1.2", 50, "mmcv"},
      {" eta: 0:03:35  iter: 19  total_loss: 1.36  loss_cls: 0.6522  lr: 3.8e-06", 19,
       "detectron2"},
      {"epoch 001:   2800 / 160368 loss=9.255, ppl=611.12, num_updates=2800, lr=2.8e-05", 2800,
       "fairseq"},
      {"  5%|▌         | 50/1000 [00:10<03:20,  4.75it/s]", 50, "hf_trainer"},
      {"Steps:  10%|█         | 100/1000 [01:40<15:00,  1.00s/it, loss=0.0781, lr=1e-5]", 100,
       "tqdm"},
      {"global_step=80 loss=2.3456 lr=5e-05", 80, "generic"},
  };
  for (const auto& e : examples) {
    EXPECT_EQ(step_of(e.line), e.step) << e.line;
    EXPECT_EQ(format_of(e.line), e.format) << e.line;
  }
}

TEST(StepParser, PerEpochCountersBecomeGlobalBatchCounts) {
  // Lightning: epoch * batches_per_epoch + batch.
  EXPECT_EQ(step_of("Epoch 2:  10%|█         | 100/1000 [00:10<01:30, 10.00it/s, loss=2.3]"),
            2100u);
  // MMEngine numbers epochs from 1; timm and the ImageNet example from 0.
  EXPECT_EQ(step_of("Epoch(train) [2][ 50/1000]  lr: 1.0e-02  time: 0.51  loss: 1.2"), 1050u);
  EXPECT_EQ(step_of("Train: 1 [  50/1251 (  4%)]  Loss: 6.598 (6.62)  LR: 8.001e-02"), 1301u);
  EXPECT_EQ(step_of("Epoch: [1][  11/5005]\tTime  0.232 ( 0.756)\tLoss 3.98e+00 (4.0e+00)"), 5016u);

  step_parser p;
  EXPECT_EQ(p.parse("Epoch 1/5").kind, line_kind::none);
  EXPECT_EQ(p.parse("1875/1875 [==============================] - 3s 1ms/step - loss: 0.48").step,
            1875u);
  p.parse("Epoch 2/5");
  const auto r = p.parse("  1/1875 [..............................] - ETA: 3s - loss: 0.11");
  EXPECT_EQ(r.kind, line_kind::step);
  EXPECT_EQ(r.step, 1876u);
  EXPECT_EQ(r.step_gap, 1u);
  EXPECT_TRUE(r.counter_restarted);
}

TEST(StepParser, EpochIndexNotPrintedIsCountedFromRestarts) {
  step_parser p;
  p.parse("Iteration: 100%|██████████| 20711/20711 [4:43:00<00:00,  1.45it/s]");
  const auto r = p.parse("Iteration:   0%|          | 1/20711 [00:00<4:43:00,  1.22it/s]");
  EXPECT_EQ(r.step, 20712u);
  EXPECT_EQ(r.step_gap, 1u);
  EXPECT_TRUE(r.counter_restarted);
}

TEST(StepParser, AnEpochsBarThatStartsAgainIsANewRun) {
  {
    step_parser p;  // an outer "Epoch" bar over a training bar that restarts every epoch
    p.parse("Epoch:   0%|          | 0/3 [00:00<?, ?it/s]");
    p.parse("Iteration: 100%|██████████| 100/100 [00:10<00:00, 10.00it/s]");
    p.parse("Epoch:  33%|███▎      | 1/3 [00:10<00:20, 10.00s/it]");
    EXPECT_EQ(p.parse("Iteration:   1%|          | 1/100 [00:00<00:10, 10.00it/s]").step, 101u);
    p.parse("Iteration: 100%|██████████| 100/100 [00:10<00:00, 10.00it/s]");
    p.parse("Epoch:   0%|          | 0/3 [00:00<?, ?it/s]");  // the next run
    const auto r = p.parse("Iteration:   1%|          | 1/100 [00:00<00:10, 10.00it/s]");
    EXPECT_EQ(r.step, 1u);
    EXPECT_TRUE(r.counter_restarted);
  }
  {
    step_parser p;  // a bar over the epochs at 0, untitled, names them
    p.parse("Training: 100%|██████████| 100/100 [00:10<00:00, 10.00it/s]");
    p.parse("  0%|          | 0/3 [00:00<?, ?it/s, epoch=0]");
    EXPECT_EQ(p.parse("Training:   1%|          | 1/100 [00:00<00:10, 10.00it/s]").step, 1u);
  }
  {
    step_parser p;  // without it, the training bar goes on counting
    p.parse("Training: 100%|██████████| 100/100 [00:10<00:00, 10.00it/s]");
    EXPECT_EQ(p.parse("Training:   1%|          | 1/100 [00:00<00:10, 10.00it/s]").step, 101u);
  }
}

TEST(StepParser, TheEpochAndTheNumberOfEpochs) {
  {
    step_parser p;  // Keras: the header says both
    EXPECT_EQ(p.parse("Epoch 2/3").epochs, 3u);
    const auto r = p.parse(" 5/20 [====>.........................] - ETA: 1s - loss: 0.5");
    EXPECT_EQ(r.epoch, 1u);
    EXPECT_EQ(r.epochs, 3u);
    EXPECT_EQ(r.step, 25u);
  }
  {
    step_parser p;  // Lightning's tqdm bar: the epoch, not how many
    const auto r = p.parse("Epoch 4:  10%|█         | 100/1000 [00:10<01:30, 10.00it/s, loss=2.3]");
    EXPECT_EQ(r.epoch, 4u);
    EXPECT_EQ(r.epochs, std::nullopt);
    // ... until a printed configuration says it; every line after carries it.
    EXPECT_EQ(p.parse("  | max_epochs: 20").epochs, 20u);
    EXPECT_EQ(p.parse("Epoch 4:  11%|█         | 110/1000 [00:11<01:30, 10.00it/s]").epochs, 20u);
  }
  {
    step_parser p;  // Lightning's rich bar: "Epoch 0/9" is the first of 10
    EXPECT_EQ(p.parse("Epoch 0/9  ━━━━━━━━━━━━━━━━━━ 100/1000 0:00:10 • 0:01:30 10.00it/s "
                      "loss: 2.3")
                  .epochs,
              10u);
  }
  for (const auto& [line, n] : std::vector<std::pair<std::string, std::optional<std::uint64_t>>>{
           {"Scheduled epochs: 300. LR stepped per epoch.", 300},
           {"train_cfg = dict(by_epoch=True, max_epochs=12, val_interval=1)", 12},
           {"Namespace(arch='transformer', max_epoch=10, max_update=0)", 10},
           {"Namespace(arch='transformer', max_epoch=0, max_update=50000)", std::nullopt},
           {"{'max_epochs': 5, 'lr': 0.001}", 5},
           {"epochs: 7", std::nullopt}}) {
    step_parser p;
    EXPECT_EQ(p.parse(line).epochs, n) << line;
  }
  step_parser p;  // old Hugging Face "Iteration" bars: the epoch counted from the restarts
  p.parse("Iteration: 100%|██████████| 20711/20711 [4:43:00<00:00,  1.45it/s]");
  EXPECT_EQ(p.parse("Iteration:   0%|          | 1/20711 [00:00<4:43:00,  1.22it/s]").epoch, 1u);
  EXPECT_EQ(p.parse("iter 10: loss 3.1462, time 13.97ms, mfu 26.69%").epoch, std::nullopt);
}

TEST(StepParser, GapsRepeatsAndRestarts) {
  step_parser p;
  auto a = p.parse("iter 10: loss 3.1462, time 13.97ms, mfu 26.69%");
  EXPECT_EQ(a.step_gap, 1u);  // the first step line
  auto b = p.parse("iter 20: loss 2.7323, time 13.86ms, mfu 26.71%");
  EXPECT_EQ(b.step_gap, 10u);  // logging every 10 steps
  auto c = p.parse("iter 20: loss 2.7323, time 13.86ms, mfu 26.71%");
  EXPECT_EQ(c.kind, line_kind::step);
  EXPECT_EQ(c.step_gap, 0u);  // the same step again (another rank's copy)
  auto d = p.parse("iter 30: loss 2.6184, time 13.82ms, mfu 26.73%");
  EXPECT_EQ(d.step_gap, 10u);
  auto e = p.parse("iter 0: loss 4.2654, time 29617.08ms, mfu -100.00%");
  EXPECT_TRUE(e.counter_restarted);
  EXPECT_EQ(e.step_gap, 1u);
  auto f = p.parse("iter 10: loss 3.1462, time 13.97ms, mfu 26.69%");
  EXPECT_EQ(f.step_gap, 10u);
  EXPECT_FALSE(f.counter_restarted);
}

TEST(StepParser, SlightlyOlderStepIsNotNew) {
  // Metrics logged late, or a lagging rank: a step a little behind the last is not a new step.
  step_parser p;
  p.parse("[step=9/100]");
  p.parse("[step=11/100]");
  const auto r = p.parse("[step=10/100,epoch=1,eta=1h]");
  EXPECT_EQ(r.kind, line_kind::step);
  EXPECT_EQ(r.step_gap, 0u);
  EXPECT_EQ(p.parse("[step=12/100]").step_gap, 1u);
}

TEST(StepParser, ValidationLineAtTheSameStepIsAnEvalResult) {
  step_parser p;
  EXPECT_EQ(p.parse("step:125/1770 train_time:30546ms step_avg:57.31ms").step_gap, 1u);
  const auto v = p.parse("step:125/1770 val_loss:4.3792 train_time:30547ms step_avg:57.32ms");
  EXPECT_EQ(v.kind, line_kind::phase_end);
  EXPECT_EQ(v.phase, "eval");
  EXPECT_EQ(v.step, 125u);
  EXPECT_EQ(metric_of(v, "val_loss"), 4.3792);
  EXPECT_EQ(p.parse("step:126/1770 train_time:30604ms step_avg:57.33ms").step_gap, 1u);

  const auto n = p.parse("step 250: train loss 1.9683, val loss 2.0677");
  EXPECT_EQ(n.kind, line_kind::phase_end);
  EXPECT_EQ(metric_of(n, "loss"), 1.9683);
  EXPECT_EQ(metric_of(n, "val_loss"), 2.0677);
}

TEST(StepParser, PrefixesAreIgnored) {
  const std::vector<const char*> lines = {
      "[rank0]:[titan] 2026-05-18 16:04:46,338 - root - INFO - step: 14  loss:  3.24405",
      "0: step: 14  loss:  3.24405",
      "[default0]:step: 14  loss:  3.24405",
      "2024-01-02 03:04:05,678 - INFO - step: 14  loss:  3.24405",
      "INFO:root:step: 14  loss:  3.24405",
      "I0301 10:01:00.123456 140234567890 train.py:600] step: 14  loss:  3.24405",
      "2024-01-02 03:04:05.678 | INFO     | __main__:train:42 - step: 14  loss:  3.24405",
      "worker-3: step: 14  loss:  3.24405",
      "[1,0]<stdout>:step: 14  loss:  3.24405",
      "04/21 21:03:53 - mmengine - INFO - step: 14  loss:  3.24405",
      "[2023-07-25 21:03:17,269] [INFO] [logging.py:96:log_dist] [Rank 0] step: 14  loss:  3.24405",
      "01/17/2024 14:02:16 [INFO|DP=0|PP=0|TP=0|ip-26-0-160-225]: step: 14  loss:  3.24405",
  };
  for (const char* line : lines)
    EXPECT_EQ(step_of(line), 14u) << line;
  // Bracketed progress is the message, not a prefix.
  EXPECT_EQ(strip_prefixes("[step=10/739328]"), "[step=10/739328]");
  EXPECT_EQ(strip_prefixes("[batch=3/9]:"), "[batch=3/9]:");
  EXPECT_EQ(strip_prefixes("[01/02 12:34:56 d2.utils.events]:  eta: 0:03:35  iter: 19"),
            "eta: 0:03:35  iter: 19");
}

TEST(StepParser, ColourCodesAndCarriageReturns) {
  EXPECT_EQ(step_of("\x1b[31mstep:  1  \x1b[32mloss: 12.2413  \x1b[33mgrad_norm:  4.5103\x1b[39m"),
            1u);
  // A tqdm bar rewritten in place: only the last segment is on the screen.
  EXPECT_EQ(step_of("\r  0%|          | 1/870 [00:01<14:30,  1.00s/it]\r  0%|          | 2/870 "
                    "[00:01<10:01,  1.44it/s]"),
            2u);
  // A trailing \r (or one that only moves the cursor) does not hide the text before it.
  EXPECT_EQ(step_of(" 10%|█         | 3/30 [00:00<00:02, 12.01it/s]\x1b[A\r"), 3u);
  std::string scratch;
  EXPECT_EQ(visible_text("a\x1b[1mb\x1b]0;title\x07"
                         "c\x08",
                         scratch),
            "abc");
}

TEST(StepParser, NotFooledByOtherProgressBarsAndNumbers) {
  const std::vector<const char*> lines = {
      "Loading checkpoint shards:  50%|█████     | 2/4 [00:03<00:03,  1.60s/it]",
      "Loading checkpoint shards [1/4]",
      "Map: 100%|██████████| 1000/1000 [00:00<00:00, 9800.12 examples/s]",
      "Filter (num_proc=4): 100%|██████████| 1000/1000 [00:00<00:00, 5000.00 examples/s]",
      "Running tokenizer on dataset: 100%|██████████| 36718/36718 [00:03<00:00, 9712.45it/s]",
      "model.safetensors: 100%|██████████| 548M/548M [00:02<00:00, 245MB/s]",
      "Downloading shards: 100%|██████████| 2/2 [01:02<00:00, 31.10s/it]",
      "Epoch: 100%|██████████| 13/13 [61:14:16<00:00, 16958.16s/it]",
      "warmup_step:20/20",
      "warmup step 5/100: loss 9.1",
      "input_ids shape: torch.Size([8, 1024])",
      "/home/user/runs/step_1000/checkpoint-2000/config.json",
      "2024-01-02 03:04:05,678 - INFO - Logging to /runs/2024-01-02/step-500",
      "timestep 5 of diffusion",
      "writer 3 started",
      "stopping_early: wallclock_cap step:1312/20000",
      "Epoch 3, global step 1500: 'val_loss' was not in top 1",
      "max_steps=10000 warmup_steps=200 log_every=10",
      "RuntimeError: CUDA error: out of memory (step 512)",
      "step 1000/1000 done, shutting down",
      "ttp: b782/782 loss:2.1",
  };
  for (const char* line : lines)
    EXPECT_EQ(step_of(line), std::nullopt) << line;
  // A real step line that merely contains the word warmup.
  EXPECT_EQ(step_of("step:20/20000 train_loss:4.8012 train_time:8390ms lr_warmup_frac:0.1"), 20u);
}

TEST(StepParser, Phases) {
  step_parser p;
  auto c = p.parse("Saving checkpoint at step 500");
  EXPECT_EQ(c.kind, line_kind::phase_begin);
  EXPECT_EQ(c.phase, "checkpoint");
  EXPECT_EQ(p.parse("  successfully saved checkpoint from iteration     130 to /ckpt").kind,
            line_kind::phase_end);
  EXPECT_EQ(p.parse("Checkpoints will be saved to /work_dirs by HardDiskBackend.").kind,
            line_kind::none);

  // An evaluation bar starts the eval phase once, and ends it at 100 %.
  auto v = p.parse("Validation DataLoader 0:   0%|          | 0/5 [00:00<?, ?it/s]");
  EXPECT_EQ(v.kind, line_kind::phase_begin);
  EXPECT_EQ(v.phase, "eval");
  EXPECT_EQ(p.parse("Validation DataLoader 0:  60%|██████    | 3/5 [00:00<00:00, 37.48it/s]").kind,
            line_kind::none);
  EXPECT_EQ(p.parse("Validation DataLoader 0: 100%|██████████| 5/5 [00:00<00:00, 38.79it/s]").kind,
            line_kind::phase_end);

  // Hugging Face: an untitled bar with another total than the training bar is evaluation.
  step_parser h;
  EXPECT_EQ(h.parse("  0%|          | 0/870 [00:00<?, ?it/s]").kind, line_kind::none);
  EXPECT_EQ(h.parse("  1%|          | 10/870 [00:05<07:50,  1.83it/s]").step, 10u);
  EXPECT_EQ(h.parse(" 10%|█         | 3/30 [00:00<00:02, 12.01it/s]").kind, line_kind::phase_begin);
  const auto d = h.parse("{'eval_loss': 3.0123, 'eval_runtime': 2.4101, 'epoch': 1.0}");
  EXPECT_EQ(d.kind, line_kind::phase_end);
  EXPECT_EQ(metric_of(d, "val_loss"), 3.0123);
  EXPECT_EQ(metric_of(d, "eval_runtime_s"), std::nullopt);
  EXPECT_EQ(metric_of(d, "eval_runtime"), 2.4101);
  EXPECT_EQ(h.parse("  1%|▏         | 11/870 [00:06<07:49,  1.83it/s]").step_gap, 1u);
}

TEST(StepParser, HuggingFaceLogDictCarriesMetricsOnly) {
  step_parser p;
  const auto r = p.parse("{'loss': 2.3, 'grad_norm': 0.8, 'learning_rate': 1.2e-04, 'epoch': 0.1}");
  EXPECT_EQ(r.kind, line_kind::none);
  EXPECT_EQ(r.format, "hf_trainer");
  EXPECT_EQ(metric_of(r, "loss"), 2.3);
  EXPECT_EQ(metric_of(r, "grad_norm"), 0.8);
  EXPECT_EQ(metric_of(r, "lr"), 1.2e-04);
  EXPECT_EQ(metric_of(r, "epoch"), 0.1);
}

TEST(StepParser, MetricLinesAfterAHeader) {
  step_parser p;
  EXPECT_EQ(p.parse("[step=1/739328]").step, 1u);
  EXPECT_EQ(metric_of(p.parse("    train/CrossEntropyLoss=11.06"), "loss"), 11.06);
  EXPECT_EQ(metric_of(p.parse("    optim/total_grad_norm=5.112"), "grad_norm"), 5.112);
  EXPECT_TRUE(
      p.parse("/usr/lib/python3/torch/utils/checkpoint.py:31: UserWarning").metrics.empty());
  step_parser c;
  c.parse("[batch=1/3]:");
  EXPECT_EQ(metric_of(c.parse("\t Train loss/train/total: 12.0570"), "loss"), 12.057);
}

TEST(StepParser, MetricNamesAndUnits) {
  step_parser p;
  auto a = p.parse("iter 100: loss 2.3456, time 123.45ms, mfu 45.67%");
  EXPECT_EQ(metric_of(a, "loss"), 2.3456);
  EXPECT_DOUBLE_EQ(*metric_of(a, "step_time_s"), 0.12345);
  EXPECT_EQ(metric_of(a, "mfu_percent"), 45.67);
  EXPECT_EQ(metric_of(a, "mfu"), std::nullopt);

  auto b = p.parse(
      "step: 114  loss:  3.24  grad_norm:  0.83  memory:  9.46GiB(64.99%)  "
      "tps: 7,282  tflops: 0.52  mfu: 0.17%");
  EXPECT_DOUBLE_EQ(*metric_of(b, "memory_bytes"), 9.46 * 1024 * 1024 * 1024);
  EXPECT_EQ(metric_of(b, "tokens_per_s"), 7282.0);
  EXPECT_DOUBLE_EQ(*metric_of(b, "flops_per_s"), 0.52e12);
  EXPECT_EQ(metric_of(b, "mfu_percent"), 0.17);

  auto c = p.parse(
      " iteration      200/   10000 | consumed samples: 800 | elapsed time per "
      "iteration (ms): 1234.5 | learning rate: 1.500E-04 | lm loss: 5.123456E+00 | "
      "grad norm: 0.231 |");
  EXPECT_DOUBLE_EQ(*metric_of(c, "step_time_s"), 1.2345);
  EXPECT_EQ(metric_of(c, "lr"), 1.5e-4);
  EXPECT_EQ(metric_of(c, "loss"), 5.123456);
  EXPECT_EQ(metric_of(c, "grad_norm"), 0.231);
  EXPECT_EQ(metric_of(c, "consumed_samples"), 800.0);

  auto d = p.parse(
      "step  300/400 | train loss 3.58 | norm 2.1 | lr 3.00e-04 | (118.41 ms | "
      "69188 tok/s)");
  EXPECT_EQ(metric_of(d, "grad_norm"), 2.1);
  EXPECT_DOUBLE_EQ(*metric_of(d, "step_time_s"), 0.11841);
  EXPECT_EQ(metric_of(d, "tokens_per_s"), 69188.0);

  auto e = p.parse("step:400/20000 train_loss:6.9357 train_time:409ms step_avg:nanms");
  EXPECT_EQ(metric_of(e, "train_time_s"), 0.409);
  EXPECT_EQ(metric_of(e, "step_avg_s"), std::nullopt);  // "nan" is not a number

  auto f = p.parse(
      "iteration: 500 / 1000 | consumed_tokens: 85.8G | tokens_per_sec: 22.8K | "
      "elapsed_time_per_iteration_ms: 11.5K | lm_loss: 2.38");
  EXPECT_DOUBLE_EQ(*metric_of(f, "consumed_tokens"), 85.8e9);
  EXPECT_DOUBLE_EQ(*metric_of(f, "tokens_per_s"), 22800.0);
  EXPECT_DOUBLE_EQ(*metric_of(f, "step_time_s"), 11.5);

  auto g = p.parse("100/1875 ━━━━━━━━━━━━━━━━━━━━ 1s 2ms/step - accuracy: 0.8 - loss: 0.5");
  (void)g;  // no epoch header: evaluate(), a phase; its metrics are not read
  auto k = p.parse(
      "completed step: 600, seconds: 5.667, TFLOP/s/device: 134.924, "
      "Tokens/s/device: 8672.758, loss: 10.374");
  EXPECT_EQ(metric_of(k, "step_time_s"), 5.667);
  EXPECT_EQ(metric_of(k, "tokens_per_s_per_device"), 8672.758);
  EXPECT_TRUE(metric_of(k, "flops_per_s_per_device").has_value());
  EXPECT_EQ(metric_of(k, "completed_step"), std::nullopt);
}

TEST(StepParser, CounterBeforeSpacedMetricsIsNoPartOfTheirName) {
  struct example {
    const char* line;
    std::uint64_t step;
    double loss;
  };
  for (const example& e : std::vector<example>{{"step 40/100 loss 2.0", 40, 2.0},
                                               {"step 41/100 loss 2.5 lr 1e-4", 41, 2.5},
                                               {"step 42/100, loss 2.0", 42, 2.0},
                                               {"iter 10/100 loss 2.25", 10, 2.25},
                                               {"Step 5/50 loss: 1.2", 5, 1.2},
                                               {"step 7 loss 3.5", 7, 3.5}}) {
    step_parser p;
    const auto r = p.parse(e.line);
    ASSERT_EQ(r.kind, line_kind::step) << e.line;
    EXPECT_EQ(r.step, e.step) << e.line;
    EXPECT_EQ(metric_of(r, "loss"), e.loss) << e.line;
    for (const auto& m : r.metrics) {
      EXPECT_EQ(m.name.find("step"), std::string::npos) << e.line << ": " << m.name;
      EXPECT_EQ(m.name.find("iter"), std::string::npos) << e.line << ": " << m.name;
    }
  }
  step_parser p;
  EXPECT_EQ(metric_of(p.parse("step 41/100 loss 2.5 lr 1e-4"), "lr"), 1e-4);
}

TEST(StepParser, MetricNormaliser) {
  EXPECT_EQ(normalise_metric("'learning_rate'", 1e-4, "")->name, "lr");
  EXPECT_EQ(normalise_metric("RunningAvgSamplesPerSec", 7.8, "")->name,
            "running_avg_samples_per_s");
  EXPECT_EQ(normalise_metric("coco/bbox_mAP", 0.3, "")->name, "coco_bbox_map");
  EXPECT_EQ(normalise_metric("train_step_timing in s", 0.45, "")->name, "step_time_s");
  EXPECT_EQ(normalise_metric("max_mem", 433, "M")->value, 433.0 * 1024 * 1024);
  EXPECT_EQ(normalise_metric("max_mem", 433, "M")->name, "max_mem_bytes");
  EXPECT_EQ(normalise_metric("data_time", 0.01, "")->name, "data_time_s");
  EXPECT_EQ(normalise_metric("", 12, "tok/s")->name, "tokens_per_s");
  EXPECT_EQ(normalise_metric("", 2, "ms/step")->name, "step_time_s");
  EXPECT_EQ(normalise_metric("", 3, "s"), std::nullopt);  // an elapsed time with no name
  EXPECT_EQ(normalise_metric("step", 3, ""), std::nullopt);
  EXPECT_EQ(normalise_metric("eta", 3, ""), std::nullopt);
}

TEST(StepParser, CustomRegex) {
  step_parser p({R"(^it (\d+) of (?<total>\d+))", R"(batch#(\d+))"});
  auto a = p.parse("it 7 of 100 loss=2.5");
  EXPECT_EQ(a.kind, line_kind::step);
  EXPECT_EQ(a.format, "custom");
  EXPECT_EQ(a.step, 7u);
  EXPECT_EQ(a.total, 100u);
  EXPECT_EQ(metric_of(a, "loss"), 2.5);
  auto b = p.parse("batch#9 done");
  EXPECT_EQ(b.step, 9u);
  EXPECT_EQ(b.total, std::nullopt);
  EXPECT_EQ(b.step_gap, 2u);
  // Built-in formats still apply to other lines.
  EXPECT_EQ(p.parse("iter 20: loss 2.7323, time 13.86ms, mfu 26.71%").format, "nanogpt");
  // The total group may come first: the step is the first other group.
  step_parser q({R"((?<total>\d+) total, at (\d+))"});
  EXPECT_EQ(q.parse("500 total, at 12").step, 12u);
}

TEST(StepParser, InvalidCustomRegexNamesTheRegexAndTheError) {
  try {
    step_parser p({"step (\\d+"});
    FAIL() << "no error";
  } catch (const usage_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--step-regex 'step (\\d+'"), std::string::npos) << what;
    EXPECT_NE(what.find("missing closing parenthesis"), std::string::npos) << what;
  }
  EXPECT_THROW(step_parser({"no group here"}), usage_error);
}

TEST(StepParser, EmptyAndOddLines) {
  step_parser p;
  for (const char* line : {"", "\r", "\x1b[A", "   ", "\xff\xfe", "|", "[", "[]", "{'", "%|"}) {
    EXPECT_EQ(p.parse(line).kind, line_kind::none) << line;
  }
}

}  // namespace
}  // namespace joules::steps

namespace joules::steps {
namespace {

TEST(StepParser, NumbersReadExactlyAsFromChars) {
  // The fast path for plain decimals must give the same double as from_chars.
  std::uint64_t x = 88172645463325252ULL;
  for (int i = 0; i < 20000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const int digits = 1 + static_cast<int>(x % 15);
    const int point = static_cast<int>((x >> 8) % static_cast<std::uint64_t>(digits + 1));
    std::string s = (x >> 20) % 2 ? "-" : "";
    std::uint64_t y = x >> 24;
    for (int d = 0; d < digits; ++d) {
      if (d == point && d > 0) s += '.';
      s += static_cast<char>('0' + y % 10);
      y /= 10;
    }
    std::size_t len = 0;
    const auto got = leading_number(s, len);
    double want = 0;
    std::from_chars(s.data(), s.data() + s.size(), want);
    ASSERT_TRUE(got.has_value()) << s;
    EXPECT_EQ(*got, want) << s;
    EXPECT_EQ(len, s.size()) << s;
  }
  std::size_t len = 0;
  EXPECT_EQ(leading_number("10,050 tok/s", len), 10050.0);
  EXPECT_EQ(len, 6u);
  EXPECT_EQ(leading_number("1.500E-04 |", len), 1.5e-4);
  EXPECT_EQ(leading_number("2:03:04", len), std::nullopt);
  EXPECT_EQ(leading_number("2024-01-02", len), std::nullopt);
  EXPECT_EQ(leading_number("1.2.3", len), std::nullopt);
  EXPECT_EQ(leading_number("nan", len), std::nullopt);
}

}  // namespace
}  // namespace joules::steps
