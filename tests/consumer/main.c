/* A program outside joules' tree that uses libjoules as an installed package: built by
 * tests/consumer/run against `cmake --install`, once with find_package(joules) (shared and
 * static) and once with pkg-config.  A window on two simulated GPUs. */
#define _POSIX_C_SOURCE 200809L
#include <joules/joules.h>
#include <stdio.h>
#include <time.h>

int main(void) {
  joules_options o;
  joules_monitor* m = NULL;
  joules_window_id id = 0;
  joules_result r;
  struct timespec pause = {0, 200000000L};
  joules_options_init(&o);
  o.backend = JOULES_BACKEND_SIM;
  o.sim_gpus = 2;
  o.cpu = 0;
  if (joules_monitor_open(&o, &m) != JOULES_OK) {
    fprintf(stderr, "consumer: %s\n", joules_last_error());
    return 1;
  }
  joules_window_begin(m, "work");
  nanosleep(&pause, NULL);
  joules_window_end(m, "work", &id);
  r.struct_size = sizeof r;
  if (joules_window_result(m, id, -1, &r, NULL, 0) != JOULES_OK || !r.final ||
      r.gpu_energy_j <= 0.0) {
    fprintf(stderr, "consumer: %s\n", joules_last_error());
    joules_monitor_close(m);
    return 1;
  }
  printf("consumer: libjoules %s, %.3f J over %.3f s on %zu GPUs\n", joules_version(),
         r.gpu_energy_j, r.duration_s, r.device_count);
  joules_monitor_close(m);
  return 0;
}
