"""Runs a command and prints the CPU time (user, system) it and its children took, its wall
time, and the CLOCK_MONOTONIC instants of its start and end:  python3 cpu_of.py CMD [ARGS...]"""
import resource
import subprocess
import sys
import time


def main():
    t0 = time.clock_gettime(time.CLOCK_MONOTONIC)
    status = subprocess.run(sys.argv[1:]).returncode
    t1 = time.clock_gettime(time.CLOCK_MONOTONIC)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"CPU {' '.join(sys.argv[1:3])}: rc={status} wall={t1 - t0:.2f}s "
          f"user={usage.ru_utime:.3f}s sys={usage.ru_stime:.3f}s "
          f"spawn_mono={t0:.6f} exit_mono={t1:.6f}", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
