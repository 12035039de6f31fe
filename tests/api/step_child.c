/* A trainer that reports its steps itself (tests/cli/test_wrap_steps.py): under `joules wrap`,
 * joules_step() tells wrap the exact instant each step ended, with its tokens.
 *
 *   joules_step_child STEPS STEP_SECONDS TOKENS [--print-steps | --close-fds]
 *
 * Prints "wrapped N" (joules_wrapped()), then per step "reported STEP T" with T the
 * CLOCK_MONOTONIC seconds taken right before joules_step(), and with --print-steps also a step
 * line of its own ("step k/STEPS | loss 1.0"), which wrap must not count a second time.
 *
 * With --close-fds it behaves like a daemon halfway through: it closes every descriptor from 3
 * up (libjoules' step socket among them) and opens a connected socket pair of its own, which
 * takes the lowest numbers, the step socket's included.  Its later steps must still reach wrap,
 * and nothing may be written into its own socket: at the end it prints "own socket: N bytes". */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <joules/joules.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

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
  int close_fds;
  int own[2] = {-1, -1};
  long k;
  if (argc < 4) {
    fprintf(stderr, "usage: %s STEPS STEP_SECONDS TOKENS [--print-steps | --close-fds]\n", argv[0]);
    return 2;
  }
  steps = strtol(argv[1], NULL, 10);
  seconds = strtod(argv[2], NULL);
  tokens = strtoull(argv[3], NULL, 10);
  print_steps = argc > 4 && strcmp(argv[4], "--print-steps") == 0;
  close_fds = argc > 4 && strcmp(argv[4], "--close-fds") == 0;
  printf("wrapped %d\n", joules_wrapped());
  fflush(stdout);
  for (k = 1; k <= steps; ++k) {
    struct timespec ts;
    double t;
    joules_status s;
    ts.tv_sec = (time_t)seconds;
    ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
    nanosleep(&ts, NULL);
    if (close_fds && k == steps / 2 + 1) {
      int fd;
      for (fd = 3; fd < 1024; ++fd)
        close(fd);
      if (socketpair(AF_UNIX, SOCK_STREAM, 0, own) != 0) {
        perror("socketpair");
        return 1;
      }
      printf("own socket: descriptors %d and %d\n", own[0], own[1]);
    }
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
  if (close_fds) {
    char buf[4096];
    ssize_t n;
    long got = 0;
    /* Whatever libjoules might have written into either end is waiting at the other one. */
    int i;
    for (i = 0; i < 2; ++i) {
      fcntl(own[i], F_SETFL, O_NONBLOCK);
      while ((n = read(own[i], buf, sizeof buf)) > 0)
        got += (long)n;
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) perror("read");
    }
    printf("own socket: %ld bytes\n", got);
  }
  return 0;
}
