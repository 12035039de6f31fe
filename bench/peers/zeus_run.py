"""Zeus has no command wrapper: this is the smallest program that measures a command with its
documented API, one ZeusMonitor window around the child (zeus.ml-energy docs, "Measuring energy").

    python zeus_run.py --out RESULT.json -- CMD [ARGS...]

Writes {"gpu_energy_j": {index: J}, "time_s": s} to RESULT.json and exits with CMD's status.
sync_execution=False: the child is another process, there is no framework to synchronise with.
The __main__ guard is required: Zeus starts helper processes with multiprocessing's spawn.
"""
import argparse
import json
import subprocess
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    from zeus.monitor import ZeusMonitor

    monitor = ZeusMonitor()
    monitor.begin_window("run", sync_execution=False)
    status = subprocess.call(cmd)
    m = monitor.end_window("run", sync_execution=False)
    with open(a.out, "w") as f:
        json.dump({"gpu_energy_j": {str(k): v for k, v in m.gpu_energy.items()},
                   "time_s": m.time}, f)
    return status


if __name__ == "__main__":
    sys.exit(main())
