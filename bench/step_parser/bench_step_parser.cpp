// How many lines per second the step parser reads.  `joules wrap` must pass 200,000 step lines
// per second end to end, so the parser's budget is about 1 us per step line, and much less for
// the other lines that make up most of a log.  Each benchmark cycles through a set of real lines
// of one kind (from tests/steps/corpus) with one parser, as wrap does: step lines of built-in
// formats, step lines only the general mechanism reads (learnt counters), lines rewritten with
// carriage returns, and lines that are not steps.

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "steps/step_parser.hpp"

namespace {

using joules::steps::step_parser;

// Step lines of several trainers; {} is replaced by an advancing step number.
const std::vector<std::pair<const char*, std::string>>& samples() {
  static const std::vector<std::pair<const char*, std::string>> s = {
      {"modded_nanogpt", "step:{}/20000 train_loss:6.9357 train_time:409ms step_avg:409.00ms"},
      {"nanogpt", "iter {}: loss 2.3456, time 123.45ms, mfu 45.67%"},
      {"torchtitan",
       "[rank0]:[titan] 2026-05-18 16:04:46,338 - root - INFO - step: {}  loss:  3.24405  "
       "grad_norm:  0.8319  memory:  9.46GiB(64.99%)  tps: 7,282  tflops: 0.52  mfu: 0.17%"},
      {"megatron",
       " iteration      {}/  250000 | consumed samples:       124928 | elapsed time per iteration "
       "(ms): 86545.2 | learning rate: 9.150E-06 | global batch size:  1024 | lm loss: "
       "2.504220E+00 | loss scale: 1.0 | grad norm: 0.231 | number of skipped iterations:   0 | "
       "number of nan iterations:   0 |"},
      {"hf_trainer_bar", "\r  1%|          | {}/870 [00:05<07:50,  1.83it/s]"},
      {"lightning_bar",
       "Epoch 0:  11%|█         | {}/100000 [00:11<01:33,  5.82s/it, loss=10.224, v_num=1933]"},
      // Formats no rule was written for: the learnt counters read them.
      {"learnt_darknet",
       "{}: 4.541296, 7.310872 avg loss, 0.001000 rate, 3.213454 seconds, 9280 images"},
      {"learnt_caffe", "I0425 10:12:49.611122  9167 solver.cpp:65] Iteration {}, loss = 6.55607"},
      {"learnt_yolox",
       "2021-10-11 14:38:12 | INFO     | yolox.core.trainer:246 - epoch: 1/80, iter: {}/99999, "
       "mem: 6736Mb, iter_time: 0.306s, data_time: 0.012s, total_loss: 14.9, iou_loss: 3.8, lr: "
       "2.462e-07, size: 640, ETA: 1:58:38"},
      {"learnt_xgboost", "[{}]\ttest-auc:0.898594\ttrain-auc:0.917665"},
      // A bar rewritten three times on one physical line (joules steps reads each rewrite).
      {"cr_rewrites",
       "\r  1%|          | {}/870 [00:05<07:50,  1.83it/s]\r  1%|          | {}/870 "
       "[00:05<07:50,  1.83it/s]\r  1%|          | {}/870 [00:05<07:50,  1.83it/s]"},
  };
  return s;
}

std::vector<std::string> lines_of(const std::string& pattern, int count) {
  std::vector<std::string> out;
  for (int i = 1; i <= count; ++i) {
    std::string l = pattern;
    for (std::size_t at = l.find("{}"); at != std::string::npos; at = l.find("{}"))
      l.replace(at, 2, std::to_string(i));
    out.push_back(std::move(l));
  }
  return out;
}

void BM_step_lines(benchmark::State& state) {
  const auto& [name, pattern] = samples()[static_cast<std::size_t>(state.range(0))];
  const auto lines = lines_of(pattern, 100000);
  step_parser parser;
  std::size_t i = 0;
  for (auto _ : state) {
    auto r = parser.parse(lines[i]);
    benchmark::DoNotOptimize(r);
    if (++i == lines.size()) {
      i = 0;
      parser = step_parser();  // start again rather than count a restart each lap
    }
  }
  state.SetLabel(name);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_step_lines)->DenseRange(0, 10);

// Lines that are not steps: the bulk of a chatty trainer's output.
void BM_other_lines(benchmark::State& state) {
  const std::vector<std::string> lines = {
      "[2023-07-25 21:03:17,269] [INFO] [logging.py:96:log_dist] [Rank 0] rank=0 time (ms) | "
      "forward_microstep: 652.42 | backward_microstep: 2164.53",
      "2020-04-05 18:38:51 | INFO | fairseq.data.data_utils | loaded 35762532 examples from: "
      "data-bin/wmt14_en_fr_share/train.en-fr.en",
      "/usr/lib/python3/dist-packages/torch/nn/modules/module.py:1501: UserWarning: Using a target "
      "size (torch.Size([32])) that is different to the input size",
      "  File \"train.py\", line 123, in <module>",
      "Map: 100%|██████████| 1000/1000 [00:00<00:00, 9800.12 examples/s]",
      "NCCL INFO Channel 00/32 :    0   1   2   3   4   5   6   7",
      "Before we proceed any further, hear me speak.",
      "generated text: the quick brown fox jumps over the lazy dog",
      // Lines with numbers that no rule takes: the learnt counters read them and find none.
      "Loaded: 0.000029 seconds",
      "Region 82 Avg IOU: 0.935601, Class: 0.999992, Obj: 0.999901, No Obj: 0.004356, .5R: "
      "1.000000, .75R: 1.000000,  count: 3",
      "I0912 11:40:27.956218 139735407601536 gpu_device.cc:1115] Created TensorFlow device "
      "(/job:localhost/replica:0/task:0/device:GPU:0 with 22853 MB memory)",
  };
  step_parser parser;
  std::size_t i = 0;
  for (auto _ : state) {
    auto r = parser.parse(lines[i]);
    benchmark::DoNotOptimize(r);
    if (++i == lines.size()) i = 0;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_other_lines);

// A line of 4 KiB (wrap parses the first 4 KiB of longer lines) without a step.
void BM_long_line(benchmark::State& state) {
  const std::string line(4096, 'x');
  step_parser parser;
  for (auto _ : state) {
    auto r = parser.parse(line);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_long_line);

}  // namespace

BENCHMARK_MAIN();
