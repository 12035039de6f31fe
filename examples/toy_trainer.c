/* A stand-in for a training script, for the demo and the tests: a set-up phase, then steps of
 * uneven length that print a log line each, the way nanoGPT-style trainers do, with an
 * evaluation every few steps.  It uses C's default stdio buffering on purpose: line-buffered on a
 * terminal, block-buffered on a pipe, like every C, C++ and Rust trainer.
 *
 *   joules-toy-trainer [--steps N] [--step-ms MS] [--jitter F] [--setup-ms MS]
 *                      [--eval-every K] [--eval-ms MS] [--seed S] [--tokens-per-step T]
 *                      [--stamps FILE]
 *
 * --stamps FILE writes, when the run ends, the CLOCK_MONOTONIC nanoseconds at which each step line
 * was written, one per line: the tests compute each step's exact energy from them.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void sleep_ms(double ms) {
  if (ms <= 0) return;
  struct timespec ts;
  ts.tv_sec = (time_t)(ms / 1000.0);
  ts.tv_nsec = (long)((ms - (double)ts.tv_sec * 1000.0) * 1e6);
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static long long monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* xorshift: the same sequence everywhere, so a test can predict step lengths. */
static unsigned long long rng_state = 88172645463325252ULL;
static double next_uniform(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / 9007199254740992.0;
}

int main(int argc, char** argv) {
  long steps = 40, eval_every = 0, tokens = 0;
  double step_ms = 100, jitter = 0.4, setup_ms = 500, eval_ms = 300;
  const char* stamps_path = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    const char* k = argv[i];
    const char* v = argv[i + 1];
    if (strcmp(k, "--steps") == 0)
      steps = atol(v);
    else if (strcmp(k, "--step-ms") == 0)
      step_ms = atof(v);
    else if (strcmp(k, "--jitter") == 0)
      jitter = atof(v);
    else if (strcmp(k, "--setup-ms") == 0)
      setup_ms = atof(v);
    else if (strcmp(k, "--eval-every") == 0)
      eval_every = atol(v);
    else if (strcmp(k, "--eval-ms") == 0)
      eval_ms = atof(v);
    else if (strcmp(k, "--seed") == 0)
      rng_state = strtoull(v, NULL, 10) * 2654435761ULL + 1;
    else if (strcmp(k, "--tokens-per-step") == 0)
      tokens = atol(v);
    else if (strcmp(k, "--stamps") == 0)
      stamps_path = v;
    else {
      fprintf(stderr, "joules-toy-trainer: unknown option %s\n", k);
      return 2;
    }
  }
  long long* stamps = calloc((size_t)(steps > 0 ? steps : 1), sizeof *stamps);
  if (stamps == NULL) return 1;
  printf("loading dataset and building the model...\n");
  sleep_ms(setup_ms);
  double loss = 10.5;
  for (long s = 1; s <= steps; ++s) {
    const double ms = step_ms * (1.0 + jitter * (2.0 * next_uniform() - 1.0));
    sleep_ms(ms);
    loss = loss * 0.97 + 0.08;
    stamps[s - 1] = monotonic_ns();
    if (tokens > 0) {
      printf("step %ld/%ld | loss %.4f | lr 3.0e-04 | dt %.1fms | tok/s %.0f\n", s, steps, loss, ms,
             (double)tokens / (ms / 1000.0));
    } else {
      printf("step %ld/%ld | loss %.4f | lr 3.0e-04 | dt %.1fms\n", s, steps, loss, ms);
    }
    if (eval_every > 0 && s % eval_every == 0 && s < steps) {
      printf("running evaluation...\n");
      sleep_ms(eval_ms);
      printf("step %ld: val loss %.4f\n", s, loss + 0.05);
    }
  }
  printf("training done\n");
  if (stamps_path != NULL) {
    FILE* f = fopen(stamps_path, "w");
    if (f == NULL) return 1;
    for (long s = 0; s < steps; ++s)
      fprintf(f, "%lld\n", stamps[s]);
    fclose(f);
  }
  free(stamps);
  return 0;
}
