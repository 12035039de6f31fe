/* A trainer that reports its steps itself (tests/cli/test_wrap_steps.py): under `joules wrap`,
 * joules_step() tells wrap the exact instant each step ended, with its tokens.
 *
 *   joules_step_child STEPS STEP_SECONDS TOKENS [--print-steps]
 *
 * Prints "wrapped N" (joules_wrapped()), then per step "reported STEP T" with T the
 * CLOCK_MONOTONIC seconds taken right before joules_step(), and with --print-steps also a step
 * line of its own ("step k/STEPS | loss 1.0"), which wrap must not count a second time. */
#define _POSIX_C_SOURCE 200809L
#include <joules/joules.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double monotonic_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
  long steps;
  double seconds;
  unsigned long long tokens;
  int print_steps;
  long k;
  if (argc < 4) {
    fprintf(stderr, "usage: %s STEPS STEP_SECONDS TOKENS [--print-steps]\n", argv[0]);
    return 2;
  }
  steps = strtol(argv[1], NULL, 10);
  seconds = strtod(argv[2], NULL);
  tokens = strtoull(argv[3], NULL, 10);
  print_steps = argc > 4 && strcmp(argv[4], "--print-steps") == 0;
  printf("wrapped %d\n", joules_wrapped());
  fflush(stdout);
  for (k = 1; k <= steps; ++k) {
    struct timespec ts;
    double t;
    joules_status s;
    ts.tv_sec = (time_t)seconds;
    ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
    nanosleep(&ts, NULL);
    t = monotonic_s();
    s = joules_step(NULL, 0, tokens, NULL);
    if (s != JOULES_OK) {
      fprintf(stderr, "joules_step: %s: %s\n", joules_strerror(s), joules_last_error());
      return 1;
    }
    printf("reported %ld %.9f\n", k, t);
    if (print_steps) printf("step %ld/%ld | loss 1.0\n", k, steps);
    fflush(stdout);
  }
  return 0;
}
