// The general mechanism of the step parser (steps/counter_learner.hpp, steps/fields.hpp): step
// counters of formats no rule was written for, global steps from per-epoch counters, carriage
// returns, what --explain says, rules turned off, resumes, and wrap's windows across checkpoints,
// evaluations and restarts.  Real trainer output is exercised in bulk by
// tests/steps/step_corpus_test.cpp.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "steps/fields.hpp"
#include "steps/step_parser.hpp"
#include "unit/step_learner_util.hpp"
#include "windows/step_windows.hpp"

namespace joules::steps {
namespace {

using learner_testing::parse_all;
using learner_testing::steps_list;
using learner_testing::steps_of;

TEST(StepLearner, CountersNoRuleKnowsAreStepsFromTheirFirstLine) {
  // darknet: a bare counter opening the line, its values after it.
  EXPECT_EQ(steps_of({"99: 469.803864, 848.945251 avg loss, 0.000000 rate, 20.457852 seconds, "
                      "6336 images",
                      "Loaded: 0.000029 seconds",
                      "100: 443.011078, 808.351807 avg loss, 0.000000 rate, 20.684246 seconds, "
                      "6400 images"}),
            (steps_list{{99, 1}, {-1, 0}, {100, 1}}));
  // Caffe behind glog's prefix: the loss line and the learning-rate line of one iteration.
  EXPECT_EQ(steps_of({"I0425 10:12:49.611122  9167 solver.cpp:65] Iteration 180, loss = 6.55607",
                      "I0425 10:13:04.672341  9167 solver.cpp:208] Iteration 200, lr = 0.01",
                      "I0425 10:13:04.672637  9167 solver.cpp:65] Iteration 200, loss = 6.55622"}),
            (steps_list{{180, 1}, {200, 20}, {200, 0}}));
  // XGBoost and CatBoost boosting rounds.
  EXPECT_EQ(steps_of({"[0]\ttest-auc:0.898594\ttrain-auc:0.917665",
                      "[1]\ttest-auc:0.900673\ttrain-auc:0.926697"}),
            (steps_list{{0, 1}, {1, 1}}));
  EXPECT_EQ(
      steps_of({"0:\tlearn: 0.6569860\ttest: 0.6570642\tbest: 0.6570642 (0)\ttotal: 70.1ms",
                "100:\tlearn: 0.1697219\ttest: 0.1530068\tbest: 0.1530068 (100)\ttotal: 3.7s"}),
      (steps_list{{0, 1}, {100, 100}}));
  // Named counters: Marian's "Up.", StyleGAN's ticks, LLaMA-Factory's JSON key, ESPnet2's range.
  EXPECT_EQ(steps_of({"[2021-07-17 12:54:33] Ep. 1 : Up. 14000 : Sen. 965,843 : Cost 5.2017 : "
                      "Time 359.59s : 3007.81 words/s"})[0],
            std::make_pair(14000LL, std::uint64_t{1}));
  EXPECT_EQ(steps_of({"tick 1     kimg 6.1      lod 0.00  minibatch 32   time 12m 16s      "
                      "sec/tick 648.1   sec/kimg 107.73"})[0]
                .first,
            1);
  EXPECT_EQ(
      steps_of(
          {R"({"current_steps": 3200, "total_steps": 3235, "loss": 4.4671, "epoch": 0.99})"})[0]
          .first,
      3200);
  EXPECT_EQ(
      steps_of({"[PC] 2020-11-11 16:30:04,578 (trainer:486) INFO: 1epoch:train:6376-6750batch: "
                "iter_time=0.001, loss=2.386, lr_0=0.100"})[0]
          .first,
      6750);
}

TEST(StepLearner, LookAlikesAreNotSteps) {
  for (const std::string line : {
           "Recording summary at step 182.",
           "INFO:tensorflow:global_step/sec: 0.0339311",
           "Region 82 Avg IOU: 0.935601, Class: 0.999992, Obj: 0.999901, count: 3",
           "    0 conv     16  3 x 3 / 1   416 x 416 x   3   ->   416 x 416 x  16  0.150 BFLOPs",
           "Epoch 3, global step 1500: 'val_loss' was not in top 1",
           "[2021/07/01 09:50:01] root INFO: train dataloader has 9738 iters",
           "During the training process, after the 180000th iteration, an evaluation is run",
           "  num_env_steps_sampled: 4000",
           "Fetching 4 files: 100%|██████████| 4/4 [00:10<00:00,  2.51s/it]",
       }) {
    step_parser p;
    EXPECT_NE(p.parse(line).kind, line_kind::step) << line;
  }
}

TEST(StepLearner, ASampleCountBesideTheStepLineIsNoStep) {
  // TFLearn prints its step, then the samples of the epoch so far.
  EXPECT_EQ(steps_of({"Training Step: 8  | total loss: 2.03040 | time: 0.275s",
                      "| Adam | epoch: 001 | loss: 2.03040 - acc: 0.2720 -- iter: 00512/55000",
                      "Training Step: 9  | total loss: 1.94953 | time: 0.186s",
                      "| Adam | epoch: 001 | loss: 1.94953 - acc: 0.2935 -- iter: 00576/55000"}),
            (steps_list{{8, 1}, {-1, 0}, {9, 1}, {-1, 0}}));
}

TEST(StepLearner, EpochLocalCountersBecomeGlobalSteps) {
  // The epoch beside the counter, printed e/E: (epoch - 1) * per-epoch + iter.
  EXPECT_EQ(steps_of({"epoch: 36/300, iter: 1040/1849, mem: 7420Mb, iter_time: 3.068s, "
                      "total_loss: 6.6, lr: 9.723e-03"})[0]
                .first,
            35 * 1849 + 1040);
  EXPECT_EQ(steps_of({"Training Epoch: 2/3, step 49/50, loss: 0.25"})[0].first, 50 + 49);
  // The global one wins over the loop's own.
  EXPECT_EQ(steps_of({"Step: 1, Global_Step: 1, loss: 2.5"})[0].first, 1);
  EXPECT_EQ(steps_of({"    --> STEP: 49/377 -- GLOBAL_STEP: 370050"})[0].first, 370050);
  // No per-epoch count printed: an epoch holds as many as its last counter said.
  EXPECT_EQ(steps_of({"INFO:root:Epoch[0] Batch [900]  Speed: 14762.29 samples/sec  "
                      "Train-accuracy=0.950313",
                      "INFO:root:Epoch[1] Batch [100]  Speed: 12488.17 samples/sec  "
                      "Train-accuracy=0.954219"}),
            (steps_list{{900, 1}, {1000, 100}}));
  // An iteration counter that goes on across epochs is global already.
  EXPECT_EQ(steps_of({"[TRAIN] epoch: 1, iter: 480/1000, loss: 1.7679, lr: 0.008199",
                      "[TRAIN] epoch: 2, iter: 500/1000, loss: 1.7884, lr: 0.007830"}),
            (steps_list{{480, 1}, {500, 20}}));
  // A bar that restarts every epoch: the count goes on.
  const auto bar = steps_of({"train: 100%|██████████| 190/190 [01:00<00:00, 3.1it/s, loss=0.51]",
                             "train:   1%|          | 1/190 [00:00<01:00, 3.1it/s, loss=0.50]",
                             "train: 100%|██████████| 190/190 [01:00<00:00, 3.1it/s, loss=0.48]"});
  EXPECT_EQ(bar, (steps_list{{190, 1}, {191, 1}, {380, 189}}));
  // Untitled too (a loop's own tqdm(loader)); until it restarts, a bar may count the whole run,
  // so it reports no epoch.
  step_parser untitled;
  EXPECT_EQ(untitled.parse("100%|██████████| 190/190 [01:00<00:00,  3.1it/s]").epoch, std::nullopt);
  const auto again = untitled.parse("  1%|          | 2/190 [00:00<01:00,  3.1it/s]");
  EXPECT_EQ(again.step, 192u);
  EXPECT_EQ(again.epoch, 1u);
  // YOLO's table rows: the epoch, then a bar of its batches.
  EXPECT_EQ(steps_of({"      1/100      3.2G    0.05123    0.02134   0.01234  12   640: "
                      "100%|██████████| 7/7 [00:03<00:00,  2.01it/s]",
                      "      2/100      3.2G    0.04123    0.02034   0.01134  10   640: "
                      "100%|██████████| 7/7 [00:03<00:00,  2.11it/s]"}),
            (steps_list{{7, 1}, {14, 7}}));
}

TEST(StepLearner, CarriageReturnsAreReadRewriteByRewrite) {
  // A bar rewritten in place, then a metrics dict on the same physical line.
  const std::string line =
      "\r 10%|█         | 10/100 [00:05<00:45,  2.00it/s]\r 20%|██        | 20/100 "
      "[00:10<00:40,  2.00it/s]{'loss': 1.25, 'learning_rate': 5e-05, 'epoch': 0.2}";
  step_parser whole;
  whole.parse(" 10%|█         | 10/100 [00:05<00:45,  2.00it/s]");
  const auto r = whole.parse(line);
  EXPECT_EQ(r.kind, line_kind::step);
  EXPECT_EQ(r.step, 20u);
  EXPECT_EQ(r.step_gap, 10u);
  bool loss = false;
  for (const auto& m : r.metrics)
    loss = loss || (m.name == "loss" && m.value == 1.25);
  EXPECT_TRUE(loss) << "the dict after the bar is read";
  // wrap reads each rewrite as a line of its own: the same state at the end.
  step_parser split;
  split.parse(" 10%|█         | 10/100 [00:05<00:45,  2.00it/s]");
  split.parse(" 10%|█         | 10/100 [00:05<00:45,  2.00it/s]");
  split.parse(" 20%|██        | 20/100 [00:10<00:40,  2.00it/s]{'loss': 1.25, 'epoch': 0.2}");
  EXPECT_EQ(split.parse(" 30%|███       | 30/100 [00:15<00:35,  2.00it/s]").step_gap,
            whole.parse(" 30%|███       | 30/100 [00:15<00:35,  2.00it/s]").step_gap);
}

TEST(StepLearner, ExplainSaysWhy) {
  step_parser p;
  std::string why;
  p.parse("145: 4.54, 7.31 avg loss, 0.001 rate, 3.2 seconds, 9280 images", why);
  EXPECT_NE(why.find("template \"#: #, # avg loss"), std::string::npos) << why;
  EXPECT_NE(why.find("learnt counter: field #0"), std::string::npos) << why;
  p.parse("iter 100: loss 2.3456, time 123.45ms, mfu 45.67%", why);
  EXPECT_EQ(why.rfind("rule nanogpt", 0), 0u) << why;
  p.parse("Loaded: 0.000029 seconds", why);
  EXPECT_NE(why.find("not read further"), std::string::npos) << why;
  p.parse("train dataloader has 9738 iters", why);
  EXPECT_NE(why.find("field #0 named 'iters' could be a counter; not taken yet"), std::string::npos)
      << why;
  p.parse("just text", why);
  EXPECT_FALSE(why.empty());
  EXPECT_EQ(template_text("Up. 14000 : Sen. 965,843 : Time 359.59s"), "Up. # : Sen. # : Time #s");
}

TEST(StepLearner, RulesTurnedOffLeaveTheLineToTheGeneralMechanism) {
  parser_options off;
  off.rules.disable(*rule_of_format("nanogpt"));
  off.rules.disable(rule::generic);
  step_parser p(off);
  const auto r = p.parse("iter 100: loss 2.3456, time 123.45ms, mfu 45.67%");
  EXPECT_EQ(r.kind, line_kind::step);
  EXPECT_EQ(r.step, 100u);
  EXPECT_EQ(r.format, "learnt");
  EXPECT_EQ(rule_of_format("phase"), std::nullopt);
  for (std::size_t i = 0; i < kRuleCount; ++i)
    EXPECT_EQ(rule_of_format(rule_name(static_cast<rule>(i))), static_cast<rule>(i));
}

TEST(StepLearner, ATrainingBarThatMovesDuringAnEvaluationBarCountsNoSteps) {
  // Lightning 1.x, read without its rule: the epoch bar also counts the validation batches.
  parser_options off;
  off.rules.disable(rule::lightning);
  const auto r =
      parse_all({"Epoch 0:  90%|█████████ | 900/1000 [00:30<00:03, 30.0it/s, loss=0.223, v_num=77]",
                 "Validation DataLoader 0:  10%|█         | 10/100 [00:00<00:03, 30.0it/s]",
                 "Epoch 0:  91%|█████████ | 910/1000 [00:30<00:03, 30.0it/s, loss=0.223, v_num=77]",
                 "Validation DataLoader 0: 100%|██████████| 100/100 [00:03<00:00, 30.0it/s]",
                 "Epoch 1:   1%|          | 10/1000 [00:00<00:30, 30.0it/s, loss=0.210, v_num=77]"},
                off);
  EXPECT_EQ(r[0].kind, line_kind::step);
  EXPECT_EQ(r[1].kind, line_kind::phase_begin);
  EXPECT_EQ(r[2].kind, line_kind::none);
  EXPECT_EQ(r[3].kind, line_kind::phase_end);
  EXPECT_EQ(r[4].kind, line_kind::step);
  EXPECT_EQ(r[4].step, 1010u);
}

TEST(StepLearner, AResumeMakesACounterThatGoesBackANewStart) {
  // Without a resume, a step a little behind the last is a late copy; after one, the run
  // starts again from its checkpoint.
  EXPECT_EQ(steps_of({"Iteration 600, loss = 1.5", "Iteration 500, loss = 1.6"})[1].second, 0u);
  const auto r = parse_all({"Iteration 600, loss = 1.5", "Resuming training from checkpoint",
                            "Iteration 500, loss = 1.6", "Iteration 510, loss = 1.6"});
  EXPECT_EQ(r[2].kind, line_kind::step);
  EXPECT_EQ(r[2].gap, 500u);
  EXPECT_EQ(r[3].gap, 10u);
}

// wrap's windows across a checkpoint, an evaluation and a restart of the trainer: steps go on
// after each, and every instant of the run is in one window.
TEST(StepLearner, WrapKeepsItsStepsAcrossCheckpointsEvaluationsAndRestarts) {
  const std::vector<std::string> lines = {
      "I0425 10:12:49.611122  9167 solver.cpp:65] Iteration 20, loss = 6.5",
      "I0425 10:12:59.611122  9167 solver.cpp:65] Iteration 40, loss = 6.4",
      "I0425 10:13:04.978760  9167 solver.cpp:130] Snapshotting to train_iter_40",
      "I0425 10:13:09.611122  9167 solver.cpp:65] Iteration 60, loss = 6.3",
      "INFO:root:Epoch[0] Validation-accuracy=0.958002",
      "I0425 10:13:19.611122  9167 solver.cpp:65] Iteration 80, loss = 6.2",
      "Resuming from train_iter_40.solverstate",
      "I0425 10:14:19.611122  9167 solver.cpp:65] Iteration 60, loss = 6.3",
      "I0425 10:14:29.611122  9167 solver.cpp:65] Iteration 80, loss = 6.2",
  };
  step_parser parser;
  step_windows w;
  const mono_time start = steady::now();
  for (std::size_t i = 0; i < lines.size(); ++i)
    w.on_line(parser.parse(lines[i]), i + 1, start + std::chrono::milliseconds(i + 1));
  w.on_exit();
  std::vector<std::string> got;
  for (std::uint64_t i = 0; i < w.closed(); ++i) {
    const window_label l = w.take_label(i);
    got.push_back(l.kind == window_kind::step    ? "step " + std::to_string(l.step)
                  : l.kind == window_kind::phase ? l.phase
                                                 : std::string(to_string(l.kind)));
  }
  // The window from the snapshot to the next step line was the checkpoint; the one before the
  // validation result, the evaluation; the restarted run's steps are steps again.
  EXPECT_EQ(got, (std::vector<std::string>{"setup", "step 40", "other", "checkpoint", "eval",
                                           "step 80", "step 60", "step 80", "tail"}));
}

TEST(StepLearner, NotebookBarsKeptOnlyAtTheEndOfEachEpoch) {
  // A notebook keeps each epoch's last draw of the training bar, with another description every
  // epoch; a bar at 0 drawn after it (the next epoch's first draw) is no step.
  const std::string bar =
      "|\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88\xe2\x96\x88| 469/469 [00:20<00:00, 22.70it/s]";
  EXPECT_EQ(steps_of({"EPOCH: 0", "Loss=0.0556 Batch_id=468 Accuracy=90.76: 100%" + bar,
                      "Test set: Average loss: 0.0779, Accuracy: 9759/10000 (97.59%)", "EPOCH: 1",
                      "Loss=0.0243 Batch_id=468 Accuracy=97.63: 100%" + bar, "EPOCH: 2",
                      "Loss=0.1705 Batch_id=468 Accuracy=98.11: 100%" + bar}),
            (steps_list{{-1, 0}, {469, 1}, {-1, 0}, {-1, 0}, {938, 469}, {-1, 0}, {1407, 469}}));
}

TEST(StepLearner, StepsBesideIterationsAndStepHeaders) {
  // Gradient accumulation: iterations count micro-batches, steps optimizer steps.
  EXPECT_EQ(
      steps_of({"Epoch 1 | iter 2 step 0 | loss train: 10.982, val: n/a | iter time: 118.21 ms",
                "Epoch 1 | iter 4 step 1 | loss train: 10.970, val: n/a | iter time: 120.01 ms",
                "Epoch 1 | iter 6 step 1 | loss train: 10.931, val: n/a | iter time: 119.02 ms"}),
      (steps_list{{0, 1}, {1, 1}, {1, 0}}));
  // A step counter over its total alone on its line heads the values that follow it.
  EXPECT_EQ(steps_of({"[step=1/739328]", "    train/CrossEntropyLoss=11.05", "[step=2/739328]"}),
            (steps_list{{1, 1}, {-1, 0}, {2, 1}}));
  // An epoch announced as starting is not a step, a finished one with its values is while the
  // log counts nothing finer.
  EXPECT_EQ(
      steps_of({"Finished Epoch[16 of 30]: [Training Set] TrainLossPerSample = 0.6258; "
                "EvalErrPerSample = 0.2048",
                "Starting Epoch 17: learning rate per sample = 0.000047  effective momentum = "
                "0.900000"}),
      (steps_list{{16, 1}, {-1, 0}}));
}

}  // namespace
}  // namespace joules::steps
