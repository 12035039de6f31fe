/* A stand-in for a training script, for the demo and the tests: a set-up phase, then steps of
 * uneven length that print a log line each, the way nanoGPT-style trainers do, with an
 * evaluation every few steps.  It uses C's default stdio buffering on purpose: line-buffered on a
 * terminal, block-buffered on a pipe, like every C, C++ and Rust trainer.
 *
 *   joules-toy-trainer [--steps N] [--step-ms MS] [--jitter F] [--setup-ms MS]
 *                      [--eval-every K] [--eval-ms MS] [--seed S] [--tokens-per-step T]
 *                      [--stamps FILE] [--slowdown-file FILE]
 *
 * --stamps FILE writes, when the run ends, the CLOCK_MONOTONIC nanoseconds at which each step line
 * was written, one per line: the tests compute each step's exact energy from them.
 *
 * --slowdown-file FILE makes the steps feel the GPUs' power limits, for `joules tune` and `joules
 * sweep` against the fake NVML: FILE is its FAKE_NVML_STATE_FILE (tests/fake_nvml/README.md),
 * whose lines `UUID LIMIT_MW FACTOR` say how much longer a step takes at each GPU's limit.  A step
 * is STEP-MS of work done at 1/FACTOR the speed, FACTOR the largest in the file (in a
 * data-parallel job the slowest GPU sets the pace), read again every 5 ms so that a limit changed
 * during a step slows the rest of it.  No file (yet): FACTOR is 1.
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

/* The largest step time factor in a FAKE_NVML_STATE_FILE; 1 without one. */
static double slowdown_factor(const char* path) {
  FILE* f = fopen(path, "r");
  if (f == NULL) return 1.0;
  char line[512];
  double most = 1.0;
  while (fgets(line, sizeof line, f) != NULL) {
    char uuid[256];
    unsigned long limit_mw = 0;
    double factor = 0.0;
    if (line[0] == '#') continue;
    if (sscanf(line, "%255s %lu %lf", uuid, &limit_mw, &factor) == 3 && factor > most)
      most = factor;
  }
  fclose(f);
  return most;
}

static long long monotonic_ns(void);

/* `ms` of work: that long, or stretched by the slowdown file's factor as it is at each moment.
 * The time each slice really took (a sleep overshoots, the file takes a moment to read) counts
 * as work done at that slice's factor, so that no overshoot adds up over a step. */
static void work_ms(double ms, const char* slowdown_path) {
  if (slowdown_path == NULL) {
    sleep_ms(ms);
    return;
  }
  double left = ms; /* of work at full speed */
  long long t = monotonic_ns();
  while (left > 0) {
    const double factor = slowdown_factor(slowdown_path);
    const double slice = left * factor < 5.0 ? left * factor : 5.0; /* wall-clock ms */
    sleep_ms(slice);
    const long long now = monotonic_ns();
    left -= (double)(now - t) / 1e6 / factor;
    t = now;
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
  const char* slowdown_path = NULL;
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
    else if (strcmp(k, "--slowdown-file") == 0)
      slowdown_path = v;
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
    double ms = step_ms * (1.0 + jitter * (2.0 * next_uniform() - 1.0));
    const long long began = monotonic_ns();
    work_ms(ms, slowdown_path);
    if (slowdown_path != NULL) ms = (double)(monotonic_ns() - began) / 1e6;
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
