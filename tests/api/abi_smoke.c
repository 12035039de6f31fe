/* The ABI smoke test: a C99 program that links libjoules.so and goes through a monitor's life on
 * the simulated backend (no GPU needed): open, devices, a window, its result, totals, a step
 * window, release, close.  Exits 0 when every call answers as joules.h says. */
#define _POSIX_C_SOURCE 200809L
#include <joules/joules.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int failures = 0;

#define CHECK(cond)                                                             \
  do {                                                                          \
    if (!(cond)) {                                                              \
      fprintf(stderr, "abi_smoke.c:%d: %s (last error: %s)\n", __LINE__, #cond, \
              joules_last_error());                                             \
      ++failures;                                                               \
    }                                                                           \
  } while (0)

static void sleep_ms(long ms) {
  struct timespec ts;
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = (ms % 1000) * 1000000L;
  nanosleep(&ts, NULL);
}

int main(void) {
  joules_options options;
  joules_monitor* m = NULL;
  joules_device_info info;
  joules_result r;
  joules_device_energy devices[4];
  joules_window_id id = 0;
  joules_window_id step_id = 0;
  size_t i;

  CHECK(strcmp(joules_version(), JOULES_VERSION_STRING) == 0);
  CHECK(strcmp(joules_strerror(JOULES_E_NOT_FOUND), "no such window") == 0);
  CHECK(joules_last_error() != NULL);

  joules_options_init(&options);
  CHECK(options.struct_size == sizeof(joules_options));
  options.backend = JOULES_BACKEND_SIM;
  options.sim_gpus = 4;
  options.sim_profile = "0.5";
  options.cpu = 0;
  CHECK(joules_monitor_open(&options, &m) == JOULES_OK);
  if (m == NULL) return 1;

  CHECK(joules_device_count(m) == 4);
  for (i = 0; i < joules_device_count(m); ++i) {
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK(joules_device_get(m, i, &info) == JOULES_OK);
    CHECK(info.kind == JOULES_DEVICE_GPU);
    CHECK(info.index == i);
    CHECK(info.method == JOULES_METHOD_SIMULATED);
    CHECK(strncmp(info.uuid, "SIM-", 4) == 0);
  }

  CHECK(joules_window_begin(m, "work") == JOULES_OK);
  CHECK(joules_window_begin(m, "work") == JOULES_E_STATE);
  sleep_ms(300);
  CHECK(joules_window_end(m, "work", &id) == JOULES_OK);
  CHECK(joules_window_end(m, "work", &id) == JOULES_E_NOT_FOUND);
  CHECK(id != 0);

  memset(&r, 0, sizeof r);
  r.struct_size = sizeof r;
  CHECK(joules_window_result(m, id, -1, &r, devices, 4) == JOULES_OK);
  CHECK(r.final != 0);
  CHECK(r.device_count == 4);
  CHECK(r.method == JOULES_METHOD_SIMULATED);
  CHECK(r.duration_s > 0.29 && r.duration_s < 1.0);
  CHECK(fabs(r.end_monotonic_s - r.begin_monotonic_s - r.duration_s) < 1e-9);
  CHECK(r.gpu_energy_j > 0.0);
  CHECK(r.total_energy_j == r.gpu_energy_j);
  CHECK(isnan(r.cpu_energy_j) && isnan(r.dram_energy_j));
  CHECK(r.error_j == 0.0);
  for (i = 0; i < 4; ++i) {
    /* 4 H100s at half utilisation: 70 W idle + 0.5 x 630 W = 385 W each. */
    CHECK(fabs(devices[i].energy_j / r.duration_s - 385.0) < 385.0 * 0.01);
    CHECK(devices[i].method == JOULES_METHOD_SIMULATED);
    CHECK(devices[i].lost == 0);
  }

  CHECK(joules_step(m, 0, 1000, &step_id) == JOULES_OK);
  CHECK(step_id != 0 && step_id != id);
  r.struct_size = sizeof r;
  CHECK(joules_window_result(m, step_id, -1, &r, NULL, 0) == JOULES_OK);
  CHECK(r.final && r.gpu_energy_j > 0.0);

  r.struct_size = sizeof r;
  CHECK(joules_totals(m, &r, NULL, 0) == JOULES_OK);
  CHECK(r.final == 0 && r.total_energy_j > 0.0);

  CHECK(joules_window_release(m, id) == JOULES_OK);
  CHECK(joules_window_release(m, id) == JOULES_E_NOT_FOUND);
  CHECK(joules_window_result(m, id, 0, &r, NULL, 0) == JOULES_E_NOT_FOUND);
  CHECK(joules_window_begin(m, NULL) == JOULES_E_INVALID_ARGUMENT);
  CHECK(joules_window_begin(NULL, "x") == JOULES_E_INVALID_ARGUMENT);
  CHECK(strlen(joules_last_error()) > 0);

  joules_monitor_close(m);
  joules_monitor_close(NULL);
  if (failures == 0) printf("abi smoke: ok\n");
  return failures == 0 ? 0 : 1;
}
