/* libjoules: the energy of GPU (and CPU, DRAM) work from C, C++ and any language with a C FFI.
 *
 * Changes since the first version of this header (append-only; no signature or layout changed):
 *   - joules_result gained begin_monotonic_s and end_monotonic_s at its end (the window's two
 *     instants); callers built against the shorter struct pass its smaller struct_size and get
 *     exactly the fields they know.
 *
 * A monitor reads the devices from one background thread (the only thread that calls the
 * driver); windows are pairs of instants on CLOCK_MONOTONIC, and the energy of a window is
 * placed at those instants from the readings around them, exactly as `joules run` and
 * `joules wrap` do.  Windows may nest and overlap.  Ending a window returns at once; its numbers
 * are final once the monitor has read every device after the window's end (at most one energy
 * counter update, about 100 ms on recent NVIDIA GPUs).
 *
 * Units: joules, watts, seconds (SI base units), as doubles.  Every figure says how it was
 * obtained (joules_method).  Strings are UTF-8; strings joules returns live as long as the
 * object they come from, or are static.
 *
 * Thread-safety: every function taking a joules_monitor may be called from any thread at the
 * same time, except joules_monitor_close, which must be the last call on that monitor.  Error
 * details are kept per thread (joules_last_error).  After fork(), a monitor opened in the parent
 * is not usable in the child (its reading thread did not fork): calls return
 * JOULES_E_FORKED; open a new monitor in the child.
 *
 * ABI: C types only; structs passed in begin with their size (struct_size) so that they can grow
 * without breaking callers built against an older header.  Every symbol starts with joules_ and
 * is versioned (JOULES_1).  docs/python.md and docs/c-api.md describe the API in full. */
#ifndef JOULES_JOULES_H
#define JOULES_JOULES_H

#include <stddef.h>
#include <stdint.h>

#define JOULES_VERSION_MAJOR 0
#define JOULES_VERSION_MINOR 1
#define JOULES_VERSION_PATCH 0
#define JOULES_VERSION_STRING "0.1.0"
/* Bumped when a function's behaviour or a struct's layout changes incompatibly. */
#define JOULES_API_VERSION 1

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes.  joules_strerror gives a fixed text; joules_last_error the detail of the last
 * call on this thread that failed. */
typedef enum joules_status {
  JOULES_OK = 0,
  JOULES_E_INVALID_ARGUMENT = 1, /* a NULL pointer, an unknown option value, a bad name */
  JOULES_E_NO_DEVICE = 2,        /* nothing can be measured: no driver, no GPU, none chosen */
  JOULES_E_BACKEND = 3,          /* the driver failed while opening */
  JOULES_E_NOT_FOUND = 4,        /* no open window of that name; no such window id */
  JOULES_E_NOT_READY = 5,        /* the window's numbers are not final yet (timeout reached) */
  JOULES_E_STATE = 6,            /* not now: a window of that name is open, the monitor closed */
  JOULES_E_NO_MEMORY = 7,
  JOULES_E_FORKED = 8,      /* the monitor was opened in a parent process */
  JOULES_E_NOT_WRAPPED = 9, /* joules_step without a monitor, not under `joules wrap` */
  JOULES_E_INTERNAL = 10
} joules_status;

/* "0.1.0": the library's version (may differ from JOULES_VERSION_STRING of the header used). */
const char* joules_version(void);
/* A fixed English text for `status`; never NULL. */
const char* joules_strerror(joules_status status);
/* The detail of the last failing call on this thread ("--gpus '7': no GPU has index 7"), or "". */
const char* joules_last_error(void);

typedef enum joules_backend {
  JOULES_BACKEND_AUTO = 0, /* NVML; fails with JOULES_E_NO_DEVICE when there is no GPU */
  JOULES_BACKEND_NVML = 1,
  JOULES_BACKEND_SIM = 2 /* simulated GPUs (a documented model): every figure is `simulated` */
} joules_backend;

typedef enum joules_device_kind {
  JOULES_DEVICE_GPU = 0,
  JOULES_DEVICE_CPU = 1, /* a CPU package (RAPL) */
  JOULES_DEVICE_DRAM = 2 /* the DRAM of a package (RAPL) */
} joules_device_kind;

typedef enum joules_method {
  JOULES_METHOD_NONE = 0,      /* nothing could be measured */
  JOULES_METHOD_COUNTER = 1,   /* differences of the device's energy counter */
  JOULES_METHOD_POLLED = 2,    /* power readings integrated over time */
  JOULES_METHOD_SIMULATED = 3, /* the simulated backend's model */
  JOULES_METHOD_ESTIMATED = 4  /* a model of a device that cannot be measured (CPU from TDP) */
} joules_method;

typedef struct joules_options {
  uint32_t struct_size;     /* sizeof(joules_options); set by joules_options_init */
  joules_backend backend;   /* default JOULES_BACKEND_AUTO */
  const char* gpus;         /* NULL: the GPUs this job may use (CUDA_VISIBLE_DEVICES, ...);
                               else "all" or a list as --gpus takes it: "0,1", UUIDs */
  int cpu;                  /* nonzero (default): also CPU packages and DRAM where RAPL reads */
  uint32_t interval_ms;     /* between regular readings; 0: the default (100) */
  const char* nvml_library; /* NULL: JOULES_NVML_LIBRARY, else libnvidia-ml.so.1 */
  const char* sim_model;    /* JOULES_BACKEND_SIM: NULL for "h100-sxm" */
  uint32_t sim_gpus;        /* JOULES_BACKEND_SIM: 0 for 8 */
  const char* sim_profile;  /* JOULES_BACKEND_SIM: NULL for "train" */
} joules_options;

/* Fills `options` with the defaults. */
void joules_options_init(joules_options* options);

typedef struct joules_monitor joules_monitor;

/* Opens the backend, chooses the devices and starts reading them; returns after every device's
 * first reading.  On failure *monitor is NULL and joules_last_error says why. */
joules_status joules_monitor_open(const joules_options* options, joules_monitor** monitor);
/* Stops the reading thread and frees the monitor and every window of it.  NULL is a no-op. */
void joules_monitor_close(joules_monitor* monitor);

typedef struct joules_device_info {
  uint32_t struct_size; /* sizeof(joules_device_info), set by the caller */
  joules_device_kind kind;
  uint32_t index; /* the GPU's index as nvidia-smi shows it; the package for CPU/DRAM */
  char uuid[96];  /* the device's key (GPU-...; a PCI bus id or a RAPL zone otherwise) */
  char name[96];
  joules_method method; /* how its energy is measured when nothing fails */
} joules_device_info;

/* The devices the monitor reads, GPUs first, in the order results list them. */
size_t joules_device_count(const joules_monitor* monitor);
joules_status joules_device_get(const joules_monitor* monitor, size_t i, joules_device_info* out);

/* A window's numbers, or the monitor's since it opened. */
typedef struct joules_device_energy {
  double energy_j;
  double error_j;       /* bound on the error of energy_j from the instants' placement */
  joules_method method; /* several methods over the window: POLLED */
  int lost;             /* the device was lost during the window: energy_j is up to the loss */
} joules_device_energy;

typedef struct joules_result {
  uint32_t struct_size; /* sizeof(joules_result), set by the caller */
  double duration_s;
  double total_energy_j; /* every device */
  double gpu_energy_j;
  double cpu_energy_j;  /* NaN when no CPU package is measured */
  double dram_energy_j; /* NaN when no DRAM is measured */
  double error_j;       /* bound on total_energy_j's error */
  joules_method method; /* the GPUs': COUNTER when all of them had counters, else POLLED, ... */
  int final;            /* nonzero: no later reading can change these numbers */
  size_t device_count;  /* joules_device_count */
  /* Appended (struct_size tells whether the caller has them): the window's instants, seconds on
   * CLOCK_MONOTONIC (time.monotonic() in Python), to join with other logs. */
  double begin_monotonic_s;
  double end_monotonic_s;
} joules_result;

typedef uint64_t joules_window_id;

/* Begins a window named `name` now.  Names of open windows are unique; windows may nest and
 * overlap.  Non-blocking: the instant is taken, the reading thread is woken. */
joules_status joules_window_begin(joules_monitor* monitor, const char* name);
/* Ends the open window `name` now and gives its id.  Non-blocking. */
joules_status joules_window_end(joules_monitor* monitor, const char* name, joules_window_id* id);
/* The window's numbers.  Waits at most `timeout_ms` for them to be final (0: do not wait; -1:
 * as long as it takes, at most one counter update); then JOULES_E_NOT_READY with the best
 * numbers so far in *result (final == 0).  `devices` may be NULL; else it receives up to
 * `capacity` entries, one per device.  The GIL-free wait of the Python package is this one. */
joules_status joules_window_result(joules_monitor* monitor, joules_window_id id, int64_t timeout_ms,
                                   joules_result* result, joules_device_energy* devices,
                                   size_t capacity);
/* Frees a window's numbers (they are kept until then, or until the monitor closes). */
joules_status joules_window_release(joules_monitor* monitor, joules_window_id id);

/* The numbers since the monitor opened, up to now (not final: final == 0). */
joules_status joules_totals(joules_monitor* monitor, joules_result* result,
                            joules_device_energy* devices, size_t capacity);

/* A training step ended now: `step` its number (0: one more than the last), `tokens` the tokens
 * it processed (0: unknown).  Under `joules wrap`, tells wrap the exact boundary (no log parsing
 * needed); with a monitor (may be NULL), the monitor also keeps the step's window, from the
 * previous step (or the monitor's opening) to now, whose id is given in *id (may be NULL).
 * Under wrap only the process whose LOCAL_RANK (else RANK) is 0 or unset sends its steps; the
 * others' calls succeed and send nothing (docs/c-api.md, "the step channel"). */
joules_status joules_step(joules_monitor* monitor, uint64_t step, uint64_t tokens,
                          joules_window_id* id);
/* Whether this process runs under `joules wrap` with its step channel (nonzero: yes). */
int joules_wrapped(void);

#ifdef __cplusplus
}
#endif

#endif /* JOULES_JOULES_H */
