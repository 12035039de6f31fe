"""A Python trainer that reports its steps through libjoules with ctypes (tests/cli/test_wrap_steps.py):

    py_step_child.py LIBJOULES STEPS STEP_SECONDS TOKENS

Prints "wrapped N", then "reported STEP T" per step, T the time.monotonic() taken right before
joules_step()."""
import ctypes
import sys
import time

lib = ctypes.CDLL(sys.argv[1])
lib.joules_step.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_void_p]
lib.joules_step.restype = ctypes.c_int
lib.joules_wrapped.restype = ctypes.c_int
lib.joules_last_error.restype = ctypes.c_char_p
steps, seconds, tokens = int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
print(f"wrapped {lib.joules_wrapped()}", flush=True)
for k in range(1, steps + 1):
    time.sleep(seconds)
    t = time.monotonic()
    status = lib.joules_step(None, 0, tokens, None)
    if status != 0:
        sys.exit(f"joules_step: {status}: {lib.joules_last_error().decode()}")
    print(f"reported {k} {t:.9f}", flush=True)
