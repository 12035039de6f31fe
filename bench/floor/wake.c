/* The floor of any sampler that reads every 100 ms: a thread that only wakes up on that
 * schedule (clock_nanosleep to an absolute deadline, next += period) and does nothing else.
 * bench/suite/fig_steady.py measures its CPU per wall second next to the tools', so that the
 * cost of waking up on this machine is told apart from the cost of the work done when awake.
 * Usage: wake PERIOD_MS SECONDS */
#include <stdlib.h>
#include <time.h>

int main(int argc, char** argv) {
  const long period_ns = (argc > 1 ? atol(argv[1]) : 100) * 1000000L;
  const long seconds = argc > 2 ? atol(argv[2]) : 60;
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  const time_t end = next.tv_sec + seconds;
  while (next.tv_sec < end) {
    next.tv_nsec += period_ns;
    while (next.tv_nsec >= 1000000000L) {
      next.tv_nsec -= 1000000000L;
      next.tv_sec += 1;
    }
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
  }
  return 0;
}
