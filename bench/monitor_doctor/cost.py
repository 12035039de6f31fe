"""CPU cost of `joules monitor` and `joules doctor` on 8 fake GPUs at 20 us per NVML call, and of
`matcha monitor` on the same fake (docs/monitor-doctor.md, "Cost").

    python3 bench/monitor_doctor/cost.py build/release/src/joules build/release/tests/fake_nvml \
        [SECONDS] [MATCHA]

CPU is utime + stime of every thread of the process (/proc/PID/stat, 10 ms ticks) over SECONDS of
steady state (the first 2 s are left out); doctor is run 20 times.  MATCHA is the `matcha`
executable of matcha-gpu (pip install matcha-gpu); without it matcha is skipped.  tmux is used for
the full-screen view."""
import json
import os
import signal
import statistics
import subprocess
import sys
import time

JOULES, FAKE = sys.argv[1], sys.argv[2]
SECONDS = float(sys.argv[3]) if len(sys.argv) > 3 else 30.0
MATCHA = sys.argv[4] if len(sys.argv) > 4 else None
TICK = os.sysconf("SC_CLK_TCK")

SCENARIO = {"devices": [{"latency_us": 20, "power": {"type": "constant", "watts": 300 + 10 * i},
                         "health": {"gpu_util_percent": 90, "sm_util_percent": 80},
                         "processes": [{"pid": 1, "used_memory_bytes": 1 << 30}]}
                        for i in range(8)]}
ENV = dict(os.environ)
ENV.pop("CUDA_VISIBLE_DEVICES", None)
ENV.update({"FAKE_NVML_SCENARIO": json.dumps(SCENARIO),
            "FAKE_NVML_EPOCH_NS": str(time.monotonic_ns() - 10**10),
            "JOULES_NVML_LIBRARY": f"{FAKE}/full/libnvidia-ml.so.1",
            "LD_LIBRARY_PATH": f"{FAKE}/full",  # for pynvml, which matcha uses
            "JOULES_POWERCAP_ROOT": "/nonexistent"})  # GPUs only


def cpu_s(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def steady_cpu(pid):
    time.sleep(2.0)
    c0, t0 = cpu_s(pid), time.monotonic()
    time.sleep(SECONDS)
    return (cpu_s(pid) - c0) / (time.monotonic() - t0)


def piped(cmd):
    p = subprocess.Popen(cmd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        return steady_cpu(p.pid)
    finally:
        p.send_signal(signal.SIGINT)
        p.wait(10)


def on_a_terminal(args):
    sock = f"joules-cost-{os.getpid()}"
    keys = ("FAKE_NVML_SCENARIO", "FAKE_NVML_EPOCH_NS", "JOULES_NVML_LIBRARY", "JOULES_POWERCAP_ROOT")
    env = " ".join(f"{k}='{ENV[k]}'" for k in keys)
    tmux = ["tmux", "-L", sock, "-f", "/dev/null"]
    subprocess.run([*tmux, "new-session", "-d", "-x", "160", "-y", "80",
                    f"env {env} {JOULES} monitor {args}"], check=True)
    try:
        pid = int(subprocess.run([*tmux, "display", "-p", "#{pane_pid}"], capture_output=True,
                                 text=True, check=True).stdout)
        return steady_cpu(pid)
    finally:
        subprocess.run([*tmux, "kill-server"])


results = {
    "joules monitor, pipe, 500 ms (default)": piped([JOULES, "monitor", "--plain"]),
    "joules monitor, pipe, 100 ms": piped([JOULES, "monitor", "--plain", "--interval", "100"]),
    "joules monitor, full screen in tmux, 500 ms": on_a_terminal(""),
}
if MATCHA:
    results["matcha monitor, defaults (100 ms)"] = piped([MATCHA, "monitor"])
    results["matcha monitor --interval 500"] = piped([MATCHA, "monitor", "--interval", "500"])
walls, cpus = [], []
for _ in range(20):
    t0, r0 = time.monotonic(), os.times()
    subprocess.run([JOULES, "doctor", "--json"], env=ENV, stdout=subprocess.DEVNULL, check=False)
    t1, r1 = time.monotonic(), os.times()
    walls.append(t1 - t0)
    cpus.append(r1.children_user - r0.children_user + r1.children_system - r0.children_system)
for name, value in results.items():
    print(f"{name:48s} {100 * value:6.2f} % of a core")
print(f"{'joules doctor wall time, median (max) of 20':48s} {1000 * statistics.median(walls):6.1f} ms "
      f"({1000 * max(walls):.1f} ms)")
print(f"{'joules doctor CPU, median of 20':48s} {1000 * statistics.median(cpus):6.1f} ms")
