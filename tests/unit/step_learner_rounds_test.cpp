// The step learner on what trainers it had not been shown print (the later rounds of logs in
// tests/steps, sixth_round among them): epochs and runs, headers and tables, other tools'
// reports, counter columns, evaluations named in cells.  The general mechanism is in
// step_learner_test.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "steps/fields.hpp"
#include "steps/step_parser.hpp"
#include "unit/step_learner_util.hpp"

namespace joules::steps {
namespace {

using learner_testing::parse_all;
using learner_testing::steps_list;
using learner_testing::steps_of;

TEST(StepLearner, EpochsAndRunsOfTrainersNotShownBefore) {
  // Tianshou: a described bar of unknown length restarts every epoch; the count goes on.
  EXPECT_EQ(steps_of({"Epoch #1: 222it [02:03,  1.79it/s, env_step=222, len=30, loss=8.7]",
                      "Epoch #2: 219it [01:38,  2.22it/s, env_step=441, len=32, loss=7.6]",
                      "Epoch #3: 228it [01:28,  2.59it/s, env_step=669, len=30, loss=9.1]"}),
            (steps_list{{222, 1}, {441, 219}, {669, 228}}));
  // An undescribed one reads a dataset: no step.
  EXPECT_EQ(steps_of({"21it [00:00, 14987.30it/s]"}), (steps_list{{-1, 0}}));
  // The PyTorch CIFAR-10 tutorial: "[epoch, batch]"; the batches of an epoch are not printed.
  EXPECT_EQ(steps_of({"[1,  2000] loss: 2.214", "[1,  4000] loss: 1.876", "[2,  2000] loss: 1.515",
                      "Finished Training"}),
            (steps_list{{2000, 1}, {4000, 2000}, {6000, 2000}, {-1, 0}}));
  // A bar over an epoch printed "e/E" counts epochs from the first one printed; its rate may
  // name the loop's unit; a bar over the epochs themselves is no step.
  EXPECT_EQ(steps_of({"Epoch 1/2: 100%|██████████| 100/100 [00:10<00:00, 9.5it/s, loss=2.3]",
                      "Epoch 2/2: 100%|██████████| 100/100 [00:10<00:00, 9.5it/s, loss=2.1]"}),
            (steps_list{{100, 1}, {200, 100}}));
  EXPECT_EQ(steps_of({"Epoch 0: 100%|████| 994/994 [03:44<00:00,  4.42batch/s, loss=0.06]",
                      "Epoch 1: 100%|████| 994/994 [03:58<00:00,  4.17batch/s, loss=0.19]",
                      "Training: 100%|████| 2/2 [07:43<00:00, 231.64s/epoch]"}),
            (steps_list{{994, 1}, {1988, 994}, {-1, 0}}));
  // A step counter after an epoch announced on a line of its own, with or without its total.
  EXPECT_EQ(steps_of({"Epoch 1/3", "Step 100/500 - loss: 2.31", "Step 200/500 - loss: 2.21",
                      "Epoch 2/3", "Step 100/500 - loss: 2.01"}),
            (steps_list{{-1, 0}, {100, 1}, {200, 100}, {-1, 0}, {600, 400}}));
  EXPECT_EQ(steps_of({"iter 100, loss 2.31", "iter 200, loss 2.21", "iter 100, loss 2.01"}),
            (steps_list{{100, 1}, {200, 100}, {300, 100}}));
  // An epoch that goes back is a new run, and so is a counter that goes back elsewhere.
  EXPECT_EQ(steps_of({"epoch 1 batch 100 loss 2.31", "epoch 1 batch 200 loss 2.21",
                      "epoch 2 batch 100 loss 2.01", "epoch 1 batch 100 loss 2.31"}),
            (steps_list{{100, 1}, {200, 100}, {300, 100}, {100, 100}}));
  // tensorpack: the global step it names after an epoch's bar is the run's step, not samples.
  EXPECT_EQ(steps_of({"100%|#####|500/500[01:49<00:00, 4.55it/s]",
                      "Epoch 16 (global_step 8000) finished, time:1 minute 49 seconds."}),
            (steps_list{{500, 1}, {8000, 7500}}));
  EXPECT_EQ(steps_of({"g_step 2000, step 152, avg_time 0.874, loss:51.5502"})[0].first, 2000);
  // PyTorch Geometric's examples: an epoch's training loss with its evaluation's accuracies.
  EXPECT_EQ(steps_of({"Epoch: 001, Loss: 1.9451, Train: 0.2071, Val: 0.2040, Test: 0.2100",
                      "Epoch: 002, Loss: 1.8451, Train: 0.3071, Val: 0.3040, Test: 0.3100"}),
            (steps_list{{1, 1}, {2, 1}}));
  // fastai: rows under a header that names the epoch and training values are epochs.
  EXPECT_EQ(steps_of({"epoch     train_loss  valid_loss  accuracy  time    ",
                      "0         1.234       0.987       0.654     00:32     ",
                      "1         0.934       0.887       0.754     00:31     "}),
            (steps_list{{-1, 0}, {0, 1}, {1, 1}}));
}

TEST(StepLearner, EpochLengthsNotPrintedSkippedEpochsAndNewRuns) {
  // MXNet's Speedometer: the batches of an epoch are not printed.  An epoch the log skipped holds
  // as many as the longest epoch seen, and a new run (its epoch goes back) counts its epochs
  // with that length.
  EXPECT_EQ(steps_of({"Epoch[0] Batch [100]\tSpeed: 1234.5 samples/sec\taccuracy=0.5",
                      "Epoch[0] Batch [200]\tSpeed: 1234.5 samples/sec\taccuracy=0.6",
                      "Epoch[1] Batch [100]\tSpeed: 1234.5 samples/sec\taccuracy=0.7",
                      "Epoch[1] Batch [200]\tSpeed: 1234.5 samples/sec\taccuracy=0.7",
                      "Epoch[3] Batch [100]\tSpeed: 1234.5 samples/sec\taccuracy=0.8",
                      "Epoch[1] Batch [100]\tSpeed: 1234.5 samples/sec\taccuracy=0.5"}),
            (steps_list{{100, 1}, {200, 100}, {300, 100}, {400, 100}, {700, 300}, {300, 300}}));
  // A counter from 0 has shown one more batch than its last count.
  EXPECT_EQ(steps_of({"epoch 0 batch 0 loss 2.31", "epoch 0 batch 1 loss 2.21",
                      "epoch 0 batch 2 loss 2.11", "epoch 1 batch 0 loss 2.01"}),
            (steps_list{{0, 1}, {1, 1}, {2, 1}, {3, 1}}));
}

TEST(StepLearner, HeadersCountersInParenthesesTablesAndEpisodes) {
  // rsl_rl heads each iteration's block of values with it; "Total steps" counts samples.
  EXPECT_EQ(steps_of({"                          Learning iteration 66/30000                     ",
                      "                            Total steps: 1608 ",
                      "                        Mean value loss: 0.4399",
                      "                          Learning iteration 67/30000                     ",
                      "                            Total steps: 1632 "}),
            (steps_list{{66, 1}, {-1, 0}, {-1, 0}, {67, 1}, {-1, 0}}));
  // DeepRM: the counter alone, its values on the lines after it.
  EXPECT_EQ(steps_of({"Iteration: \t 0", "NumTimesteps: \t 32549", "Loss:     \t 0.1269",
                      "Iteration: \t 1", "NumTimesteps: \t 32898"}),
            (steps_list{{0, 1}, {-1, 0}, {-1, 0}, {1, 1}, {-1, 0}}));
  // keras-rl: the count over its total opening the line, not the episode's own steps.
  EXPECT_EQ(
      steps_of({"39160/50000: episode: 569, duration: 0.073s, episode steps: 13, loss: 78.8",
                "39497/50000: episode: 570, duration: 1.759s, episode steps: 337, loss: 5.1"}),
      (steps_list{{39160, 1}, {39497, 337}}));
  // A counter in the parenthesis that opens the line; a table drawn with '|' under its header.
  EXPECT_EQ(steps_of({"(1) loss = 0.5", "(2) loss = 0.4"}), (steps_list{{1, 1}, {2, 1}}));
  EXPECT_EQ(
      steps_of({"| Iteration | Training Loss | Training Accuracy | Elapsed Time (seconds) |",
                "| 1         | 2.931         | 0.231             | 17.959                 |",
                "| 2         | 2.631         | 0.448             | 40.837                 |"}),
      (steps_list{{-1, 0}, {1, 1}, {2, 1}}));
  // An agent's episodes where nothing finer is counted; "mean 100 episode reward" names none.
  EXPECT_EQ(
      steps_of({"- Episode 00057075 Frame 00000199  Samples: 00100000  Reward: 30  Epsilon: 0.05",
                "- Episode 00057076 Frame 00000199  Samples: 00100000  Reward: 45  Epsilon: 0.05"}),
      (steps_list{{57075, 1}, {57076, 1}}));
  // The epoch as the step with any quantity beside it, and in a dict whose epoch is whole.
  EXPECT_EQ(steps_of({"Epoch: 0001 cost= 0.510", "Epoch: 0002 cost= 0.410"}),
            (steps_list{{1, 1}, {2, 1}}));
  EXPECT_EQ(steps_of({"{'epoch': 1, 'train_loss': 0.5, 'val_acc': 0.7}",
                      "{'epoch': 2, 'train_loss': 0.4, 'val_acc': 0.75}"}),
            (steps_list{{1, 1}, {2, 1}}));
  // Boosting rounds with XGBoost's metric names only.
  EXPECT_EQ(steps_of({"[1]\tvalidation_0-mlogloss:1.01\tvalidation_1-mlogloss:1.1",
                      "[2]\tvalidation_0-mlogloss:1.02\tvalidation_1-mlogloss:1.1"}),
            (steps_list{{1, 1}, {2, 1}}));
  // A second run whose counter counts to another total is a new run, not another loop; an
  // evaluation's count over its own total beside the training one is not.
  EXPECT_EQ(steps_of({"Step 100/1000, loss: 2.3", "Step 900/1000, loss: 1.1",
                      "Step 10/2000, loss: 2.3", "Step 20/2000, loss: 2.2"}),
            (steps_list{{100, 1}, {900, 800}, {10, 10}, {20, 10}}));
  EXPECT_EQ(steps_of({"Step 100/1000, loss: 2.3", "Step 200/1000, loss: 2.1",
                      "Step 10/50, val_loss: 2.3", "Step 300/1000, loss: 2.0"}),
            (steps_list{{100, 1}, {200, 100}, {-1, 0}, {300, 100}}));
  // Not the Hugging Face Trainer's dicts, whose epoch is a fraction.
  EXPECT_EQ(steps_of({"{'loss': 3.4512, 'learning_rate': 4.94e-05, 'epoch': 0.03}"}),
            (steps_list{{-1, 0}}));
}

TEST(StepLearner, ValuesUnderATrainersOwnNamesAreTrainingValues) {
  // A GAN's losses, a VAE's ELBO: names the parser does not know, values with a fraction part.
  EXPECT_EQ(steps_of({"Iter 40/1000 D: 0.51 G: 0.82", "Iter 80/1000 D: 0.50 G: 0.83"}),
            (steps_list{{40, 1}, {80, 40}}));
  EXPECT_EQ(steps_of({"[40] elbo: -120.5 kl: 3.2", "[80] elbo: -110.5 kl: 3.1"}),
            (steps_list{{40, 1}, {80, 40}}));
  EXPECT_EQ(steps_of({"Epoch: 1 D: 0.51 G: 0.82", "Epoch: 2 D: 0.50 G: 0.83"}),
            (steps_list{{1, 1}, {2, 1}}));
  // A setting, versions, and a fraction under another name than a step counter's are not.
  EXPECT_EQ(steps_of({"epochs: 10, dropout: 0.5", "Python 3.10 on linux, step 3/5 done",
                      "step 5/10 CUDA 11.8",
                      "Inference done 11/5000. Dataloading: 0.0008 s/iter. Inference: 0.0512 "
                      "s/iter."}),
            (steps_list{{-1, 0}, {-1, 0}, {-1, 0}, {-1, 0}}));
  // Named after a word of evaluation, they are an evaluation's results at the run's step.
  const auto eval = parse_all({"iter 240 loss 2.01 lr 0.1", "iter 250 loss 1.96 lr 0.1",
                               "round 250 | Validation bpb: 1.1012"});
  EXPECT_EQ(eval[2].kind, line_kind::phase_end);
  std::vector<std::string> fields_of = {"D: 0.51", "F1=0.75", "elbo -120.5"};
  for (const auto& m : fields_of) {
    line_fields f;
    read_fields(m, f);
    EXPECT_TRUE(f.named_values) << m;
  }
  for (const std::string m : {"Python 3.10", "CUDA 11.8", "version 1.5", "v1.5", "3.25"}) {
    line_fields f;
    read_fields(m, f);
    EXPECT_FALSE(f.named_values) << m;
  }
}

TEST(StepLearner, AStepCounterOverANewTotalAfterItsLoopEndedOrGoingOnIsTheRuns) {
  // The loop reached its total: a counter that starts again over another total is a new run,
  // even with nothing but the counter on its lines.
  EXPECT_EQ(steps_of({"Step 50/100", "Step 100/100", "Step 10/200", "Step 20/200"}),
            (steps_list{{50, 1}, {100, 50}, {10, 10}, {20, 10}}));
  // A run resumed with a longer schedule goes on towards the larger total.
  EXPECT_EQ(steps_of({"Update 100/1000, reward 2.31", "Update 200/1000, reward 2.11",
                      "Update 210/2000, reward 2.01", "Update 220/2000, reward 1.91"}),
            (steps_list{{100, 1}, {200, 100}, {210, 10}, {220, 10}}));
  // Short of its total and going back with no values, it is still another loop, and --explain
  // says why.
  step_parser p;
  std::string why;
  p.parse("Step 50/100", why);
  const auto r = p.parse("Step 10/200", why);
  EXPECT_NE(r.kind, line_kind::step);
  EXPECT_NE(why.find("another loop (it went back on a line without training values)"),
            std::string::npos)
      << why;
}

TEST(StepLearner, AnEpochLineOfALaterRunStartsItAgain) {
  // The log counts epochs; a later run prints its epochs with its evaluation beside them.
  EXPECT_EQ(steps_of({"Epoch: 5 loss: 0.5", "Epoch: 6 loss: 0.4",
                      "Epoch: 1 train_loss: 0.9 val_loss: 1.0",
                      "Epoch: 2 train_loss: 0.8 val_loss: 0.9"}),
            (steps_list{{5, 1}, {6, 1}, {1, 1}, {2, 1}}));
  // Once a finer counter has made steps, an epoch's line is not one.
  EXPECT_EQ(steps_of({"step 100/500 loss 0.5", "step 200/500 loss 0.4",
                      "Epoch: 1 loss: 0.41 acc: 0.88", "Epoch: 2 loss: 0.39 acc: 0.89"}),
            (steps_list{{100, 1}, {200, 100}, {-1, 0}, {-1, 0}}));
}

TEST(StepLearner, ARunOfAnotherProgramThatCountsEpochsHasThemAsSteps) {
  // A program whose bars count (PyG's sampling example), then one that prints only epochs
  // (DGL's pure_pyg.py): its epochs go back and nothing finer is counted on its first two epoch
  // lines.  The first is held back (a trainer may print the epoch before the steps in it), the
  // next ones are steps.
  const std::vector<std::string> two_programs = {
      "Epoch 00: 100%|██████████| 90941/90941 [00:02<00:00, 35622.37it/s]",
      "Epoch 00, Loss: 2.1922, Approx. Train: 0.4017",
      "Time 2.56",
      "Evaluating: 100%|██████████| 508029/508029 [00:02<00:00, 239648.41it/s]",
      "Train: 0.5455, Val: 0.5342, Test: 0.4670",
      "Epoch 01: 100%|██████████| 90941/90941 [00:01<00:00, 51098.59it/s]",
      "Epoch 01, Loss: 2.2190, Approx. Train: 0.3943",
      "Time 1.78",
      "Evaluating: 100%|██████████| 508029/508029 [00:01<00:00, 271906.52it/s]",
      "Train: 0.5429, Val: 0.5406, Test: 0.4877",
      "Epoch 02: 100%|██████████| 90941/90941 [00:01<00:00, 50560.25it/s]",
      "Epoch 02, Loss: 2.1863, Approx. Train: 0.4050",
      "device is:  cpu",
      "Epoch: 0, Loss: 2.1602, Accuracy: 0.4013, Val Acc: 0.4994",
      "Epoch: 1, Loss: 1.5205, Accuracy: 0.5548, Val Acc: 0.5373",
      "Epoch: 2, Loss: 1.4128, Accuracy: 0.5814, Val Acc: 0.5565"};
  const auto got = steps_of(two_programs);
  ASSERT_EQ(got.size(), 16U);
  EXPECT_EQ(got[10].first, 272823);
  EXPECT_EQ(got[13].first, -1);
  EXPECT_EQ(got[14], (std::pair<long long, std::uint64_t>{1, 1}));
  EXPECT_EQ(got[15], (std::pair<long long, std::uint64_t>{2, 1}));
  // The same trainer run again counts its steps again (the bar of 500 goes on as a new epoch
  // does): its epoch lines stay what they were.
  EXPECT_EQ(
      steps_of({"step 100/500 loss 0.5", "Epoch 1, loss 0.41, acc 0.88", "step 200/500 loss 0.4",
                "Epoch 2, loss 0.40, acc 0.89", "Epoch 1, loss 0.52, acc 0.85",
                "step 100/500 loss 0.6", "Epoch 2, loss 0.42, acc 0.87"}),
      (steps_list{{100, 1}, {-1, 0}, {200, 100}, {-1, 0}, {-1, 0}, {600, 400}, {-1, 0}}));
}

TEST(StepLearner, AStepCountWithoutTotalOrEpochThatGoesBackStartsANewRun) {
  // Trax: "Step" counts the run; back at 1 it is a new run, not a second epoch.
  const auto got = steps_of({"Step      1: Ran 1 train steps in 1.20 secs",
                             "Step    100: Ran 99 train steps in 1.60 secs",
                             "Step    200: Ran 100 train steps in 1.53 secs",
                             "Step      1: Ran 1 train steps in 58.45 secs",
                             "Step     50: Ran 49 train steps in 45.91 secs"});
  EXPECT_EQ(got, (steps_list{{1, 1}, {100, 99}, {200, 100}, {1, 1}, {50, 49}}));
  // Batches without them start again as an epoch's do: the count goes on.
  EXPECT_EQ(
      steps_of({"batch 1 loss 0.9", "batch 2 loss 0.8", "batch 3 loss 0.7", "batch 1 loss 0.6"}),
      (steps_list{{1, 1}, {2, 1}, {3, 1}, {4, 1}}));
}

TEST(StepLearner, ReportsOfOtherToolsAndTrainers) {
  // ParlAI's dicts count their updates; the Hugging Face Trainer's do not.
  EXPECT_EQ(steps_of({"[ time:2.0s total_exs:3616 epochs:0.4 time_left:24.0s ] {'exs': 3616, "
                      "'lr': 1, 'num_updates': 113, 'loss': 122.7, 'ppl': 3.031}",
                      "[ time:4.0s total_exs:7360 epochs:0.82 time_left:21.0s ] {'exs': 3744, "
                      "'lr': 1, 'num_updates': 230, 'loss': 107.5, 'ppl': 2.505}"}),
            (steps_list{{113, 1}, {230, 117}}));
  // mpirun's --tag-output prefix is the rank's, not a counter.
  EXPECT_EQ(steps_of({"[1,1]<stdout>:Epoch 0/100, Batch 16/29316",
                      "[1,0]<stdout>:Total loss is  236.6 ETA is  7:57:00.494483",
                      "[1,1]<stdout>:Total loss is  236.6 ETA is  7:57:05.048570",
                      "[1,0]<stdout>:Epoch 0/100, Batch 17/29316"}),
            (steps_list{{16, 1}, {-1, 0}, {-1, 0}, {17, 1}}));
  // Gensim: an epoch done, named with a dash; the progress inside an epoch is not one.
  EXPECT_EQ(steps_of({"2021-09-29 15:45:59,351 : INFO : EPOCH 1 - PROGRESS: at 1.95% examples, "
                      "373321 words/s, in_qsize 5, out_qsize 0",
                      "2021-09-29 15:46:21,878 : INFO : EPOCH - 1 : training on 13159108 raw "
                      "words (9841146 effective words) took 23.5s, 418028 effective words/s",
                      "2021-09-29 15:46:22,879 : INFO : EPOCH 2 - PROGRESS: at 1.95% examples, "
                      "379191 words/s, in_qsize 4, out_qsize 1",
                      "2021-09-29 15:46:45,412 : INFO : EPOCH - 2 : training on 13159108 raw "
                      "words (9843686 effective words) took 23.7s, 415290 effective words/s"}),
            (steps_list{{-1, 0}, {1, 1}, {-1, 0}, {2, 1}}));
  // Kaldi's scripts: the bracket that ends with the level is the logger's prefix.
  std::string why;
  step_parser p;
  p.parse(
      "2022-05-12 22:12:47,024 [steps/nnet3/chain/train.py:529 - train - INFO ] Iter: "
      "80/959   Jobs: 1   Epoch: 1.67/20.0 (8.3% complete)   lr: 0.000825",
      why);
  const auto kaldi = p.parse(
      "2017-09-08 03:18:41,237 [steps/libs/nnet3/train/chain_objf/"
      "acoustic_model.py:301 - train_one_iteration - INFO ] On iteration "
      "219, learning rate is 0.0017154569002.",
      why);
  EXPECT_EQ(kaldi.step, 219U);
  EXPECT_NE(why.find("template \"On iteration #, learning rate is #.\""), std::string::npos) << why;
}

TEST(StepLearner, ACounterColumnFurtherRightNamesTheNumberUnderIt) {
  // Vowpal Wabbit: the header's first columns count nothing; "counter" further right does, and
  // its numbers stand right-aligned under it.  The header printed again starts a new table: its
  // counter, lower, is a new run.
  const std::vector<std::string> vw = {
      "average    since         example     example  current  current  current  current",
      "loss       last          counter      weight    label  predict features     pass",
      "0.000000   0.000000            3         3.0   0.0000   0.0000        4        0",
      "0.333333   0.666667            6         6.0   0.0000   1.0000        4        0",
      "0.454545   0.600000           11        11.0   0.0000   0.0000        4        0",
      "0.353886   0.278257         1392      1392.0   0.0000   0.0000        4        1",
      "Num weight bits = 18",
      "average    since         example     example  current  current  current",
      "loss       last          counter      weight    label  predict features",
      "0.641010   0.641010            3         3.0  -1.0000  -0.1864        4",
      "0.577645   0.514281            6         6.0  -1.0000  -0.5663        7"};
  EXPECT_EQ(steps_of(vw), (steps_list{{-1, 0},
                                      {-1, 0},
                                      {3, 1},
                                      {6, 3},
                                      {11, 5},
                                      {1392, 1381},
                                      {-1, 0},
                                      {-1, 0},
                                      {-1, 0},
                                      {3, 3},
                                      {6, 3}}));
}

TEST(StepLearner, EvaluationsNamedInACellOrRightAfterTheStep) {
  step_parser p;
  // Coqui STT: the evaluation's own steps are no training steps.
  EXPECT_EQ(p.parse("Epoch 6 |   Training | Elapsed Time: 0:01:55 | Steps: 289 | Loss: 54.50").kind,
            line_kind::step);
  const auto valid = p.parse(
      "Epoch 6 | Validation | Elapsed Time: 0:00:27 | Steps: 176 | Loss: 62.08 | Dataset: dev.csv");
  EXPECT_NE(valid.kind, line_kind::step);
  // Trax: "eval" right after the step it reports at ends an evaluation.
  step_parser trax;
  EXPECT_EQ(trax.parse("Step    100: Ran 99 train steps in 1.60 secs").kind, line_kind::step);
  EXPECT_EQ(trax.parse("Step    100: train CategoryCrossEntropy |  33.01021576").step_gap, 0U);
  const auto eval = trax.parse("Step    100: eval  CategoryCrossEntropy |  4.50655540");
  EXPECT_EQ(eval.kind, line_kind::phase_end);
  EXPECT_EQ(eval.phase, "eval");
  // A save that did not happen begins no checkpoint.
  EXPECT_EQ(trax.parse("Did not save checkpoint as output_dir is None").kind, line_kind::none);
  EXPECT_EQ(trax.parse("Saving checkpoint to /tmp/model").kind, line_kind::phase_begin);
}

}  // namespace
}  // namespace joules::steps
