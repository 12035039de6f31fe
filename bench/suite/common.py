"""Paths, environments, scenarios, statistics and process measurement shared by the figures.

Standard library only: bench/run itself runs under any python3 >= 3.9; the peers run from the
suite's own virtual environment (bench/.venv), each in its own process.
"""
from __future__ import annotations

import json
import os
import pathlib
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
# The Release build (make bench), or another build tree named by JOULES_BENCH_BUILD (a figure
# that measures no CPU cost, such as tune's, can run on the debug build).
BUILD = pathlib.Path(os.environ.get("JOULES_BENCH_BUILD", ROOT / "build" / "release")).resolve()
BUILD_NAME = os.path.relpath(BUILD, ROOT)
JOULES = BUILD / "src" / "joules"
FAKE_DIR = BUILD / "tests" / "fake_nvml"
FAKE_FULL = FAKE_DIR / "full"
TOY_TRAINER = BUILD / "examples" / "joules-toy-trainer"
SCRAPE_LOAD = BUILD / "bench" / "exposition" / "joules_scrape_load"
PASSTHROUGH_CEILING = BUILD / "bench" / "passthrough" / "passthrough_ceiling"
WRITE_LATENCY = BUILD / "bench" / "passthrough" / "write_latency"
FAKE_SMI_BIN = ROOT / "tests" / "fake_nvml" / "bin"
VENV = BENCH / ".venv"
VPY = VENV / "bin" / "python"
PEERS = BENCH / "peers"
CHILDREN = BENCH / "children"
SYS_PY = sys.executable  # children that stand in for trainers run on the suite's own python

sys.path.insert(0, str(ROOT / "tests" / "fake_nvml"))
sys.path.insert(0, str(ROOT / "tests" / "cli"))
import scenario as fake  # noqa: E402  tests/fake_nvml/scenario.py: the exact truth

TOOLS = ["joules", "matcha", "zeus", "codecarbon", "carbontracker"]
PEER_TOOLS = TOOLS[1:]


class Ctx:
    """What every figure gets: options, a scratch folder, and a log function."""

    def __init__(self, quick: bool, work: pathlib.Path, verbose: bool = True):
        self.quick = quick
        self.work = work
        self.verbose = verbose

    def log(self, msg: str) -> None:
        if self.verbose:
            print(f"bench: {msg}", file=sys.stderr, flush=True)

    def tmpdir(self, prefix: str) -> pathlib.Path:
        return pathlib.Path(tempfile.mkdtemp(prefix=prefix + "-", dir=self.work))


# ---------------------------------------------------------------------------------------------
# Scenarios for the fake NVML

def power_segments(seed: int, seconds: float, dt_s: float = 0.02, low: float = 100.0,
                   high: float = 700.0, start_s: float = 0.0, idle_w: float | None = None) -> dict:
    """Power piecewise constant on dt_s segments drawn in [low, high] W.  With idle_w the GPU
    draws idle_w before start_s and after start_s + seconds: with a tiny idle_w, every
    measurement window that covers the busy interval has the same exact energy (to ~1e-6)."""
    rng = random.Random(seed)
    n = int(round(seconds / dt_s))
    watts = [round(rng.uniform(low, high), 3) for _ in range(n)]
    if idle_w is not None:
        return {"type": "segments", "start_s": start_s - dt_s, "dt_s": dt_s,
                "watts": [idle_w, *watts, idle_w]}
    return {"type": "segments", "start_s": start_s, "dt_s": dt_s, "watts": watts}


def constant_scenario(gpus: int, watts: float = 300.0, latency_us: int = 20,
                      update_ms: int = 100, counter_cpu_us: int = 0) -> dict:
    """counter_cpu_us: CPU time each read of the energy counter takes (3,900 µs on an H100,
    docs/nvml-notes.md §2.4); 0, as cheap as any other call."""
    counter = {"update_ms": update_ms}
    if counter_cpu_us:
        counter["read_cpu_us"] = counter_cpu_us
    return {"latency_us": latency_us,
            "devices": [{"power": {"type": "constant", "watts": watts},
                         "energy_counter": dict(counter)} for _ in range(gpus)]}


def fake_env(scenario: dict | str, epoch_ns: int | None = None, variant: str = "full",
             extra: dict | None = None) -> dict:
    """Environment under which joules and every pynvml peer load the fake libnvidia-ml.so.1."""
    env = dict(os.environ)
    for k in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "JOULES_RUN_ID", "MATCHA_RUN_ID",
              "SLURM_JOB_ID", "SLURM_STEP_ID", "JOULES_REGION", "FAKE_NVML_CLOCK_FILE",
              "FAKE_NVML_CALL_LOG", "PYTHONUNBUFFERED", "JOULES_NVML_LIBRARY"):
        env.pop(k, None)
    if epoch_ns is None:
        epoch_ns = time.monotonic_ns() - 10 * 10**9
    text = scenario if isinstance(scenario, str) else json.dumps(scenario)
    env.update({
        "LD_LIBRARY_PATH": str(FAKE_DIR / variant),
        "FAKE_NVML_SCENARIO": text,
        "FAKE_NVML_EPOCH_NS": str(epoch_ns),
        # codecarbon decides whether NVML exists by running nvidia-smi first.
        "PATH": f"{FAKE_SMI_BIN}:{VENV / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}",
        # GPU only: the host's RAPL (and none here) stays out of joules' totals.
        "JOULES_POWERCAP_ROOT": str(ROOT / "tests" / "fixtures" / "powercap" / "absent"),
        "PYTHONDONTWRITEBYTECODE": "1",
    })
    if extra:
        env.update(extra)
    return env


# ---------------------------------------------------------------------------------------------
# Statistics

def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def percentile(xs, p):
    s = sorted(x for x in xs if x is not None)
    if not s:
        return None
    k = (len(s) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def summary(xs) -> dict:
    """Median and spread of repeated runs: min, max, and the runs themselves."""
    xs = [x for x in xs if x is not None]
    if not xs:
        return {"n": 0, "median": None, "min": None, "max": None, "runs": []}
    return {"n": len(xs), "median": statistics.median(xs), "min": min(xs), "max": max(xs),
            "runs": xs}


def ratio(peer, ours):
    if peer is None or ours is None or ours == 0:
        return None
    return peer / ours


# ---------------------------------------------------------------------------------------------
# Processes: CPU time (ns, from schedstat) and memory of a process tree, sampled from /proc

def _read(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return f.read().decode("ascii", "replace")
    except OSError:
        return None


def _ppid_map() -> dict[int, int]:
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        s = _read(f"/proc/{name}/stat")
        if not s:
            continue
        r = s.rfind(")")
        fields = s[r + 2:].split()
        try:
            out[int(name)] = int(fields[1])
        except (IndexError, ValueError):
            pass
    return out


def descendants(pid: int) -> list[int]:
    """pid and every process below it."""
    parents = _ppid_map()
    kids: dict[int, list[int]] = {}
    for p, pp in parents.items():
        kids.setdefault(pp, []).append(p)
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        if p in parents or p == pid:
            out.append(p)
            todo.extend(kids.get(p, []))
    return out


def cmdline(pid: int) -> list[str]:
    s = _read(f"/proc/{pid}/cmdline")
    return [a for a in s.split("\0") if a] if s else []


def thread_cpu_ns(pid: int) -> dict[int, int]:
    """CPU time of every live thread of pid, in ns (schedstat: nanosecond resolution)."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        s = _read(f"/proc/{pid}/task/{tid}/schedstat")
        if s:
            try:
                out[int(tid)] = int(s.split()[0])
            except (IndexError, ValueError):
                pass
    return out


CLK_TCK = os.sysconf("SC_CLK_TCK")


def process_cpu_ns(pid: int) -> int | None:
    """utime + stime of a process, exited threads included, in ns (clock-tick resolution)."""
    s = _read(f"/proc/{pid}/stat")
    if not s:
        return None
    f = s[s.rfind(")") + 2:].split()
    try:
        return (int(f[11]) + int(f[12])) * 10**9 // CLK_TCK
    except (IndexError, ValueError):
        return None


def status_kb(pid: int, key: str) -> int:
    s = _read(f"/proc/{pid}/status")
    if not s:
        return 0
    for line in s.splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


class CpuLedger:
    """CPU seen so far of a changing set of processes: every thread's and every process's last
    reading is kept, so that threads and processes that end still count."""

    def __init__(self):
        self._tid_ns: dict[tuple[int, int], int] = {}
        self._pid_ns: dict[int, int] = {}

    def look(self, pids: list[int]) -> tuple[int, int, int]:
        """Reads `pids`; returns (schedstat ns of all threads, utime+stime ns of all processes,
        processes seen)."""
        for p in pids:
            for tid, ns in thread_cpu_ns(p).items():
                self._tid_ns[(p, tid)] = ns
            ticks = process_cpu_ns(p)
            if ticks is not None:
                self._pid_ns[p] = ticks
        return sum(self._tid_ns.values()), sum(self._pid_ns.values()), len(self._pid_ns)


class Sample:
    """One look at a tool's processes.  fine_ns: the nanosecond schedstat of every thread ever
    seen (a thread that ended keeps its last reading); coarse_ns: utime+stime of every process
    ever seen, in clock ticks, which also holds threads that lived and died between two looks
    (codecarbon starts a thread per timer tick)."""
    __slots__ = ("t", "fine_ns", "coarse_ns", "procs", "rss_kb", "hwm_kb")

    def __init__(self, t, fine_ns, coarse_ns, procs, rss_kb, hwm_kb):
        self.t, self.fine_ns, self.coarse_ns = t, fine_ns, coarse_ns
        self.procs, self.rss_kb, self.hwm_kb = procs, rss_kb, hwm_kb


def cpu_between(a: Sample, b: Sample) -> float:
    """CPU seconds between two samples: the fine count, unless the tick count shows more than its
    own resolution allows (threads the fine count never saw)."""
    fine = (b.fine_ns - a.fine_ns) / 1e9
    coarse = (b.coarse_ns - a.coarse_ns) / 1e9
    slack = 2.0 * max(a.procs, b.procs, 1) / CLK_TCK
    return coarse if coarse > fine + slack else fine


class Watched:
    """A launched tool and what a background thread sees of it: its process tree (the workload
    excluded), CPU time and memory over time, and when its workload started."""

    def __init__(self, name: str, cmd: list[str], env: dict, cwd=None, workload: str | None = None,
                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, period: float = 0.1,
                 rss_limit_kb: int | None = None):
        self.name, self.cmd, self.workload = name, cmd, workload
        self.rss_limit_kb = rss_limit_kb
        self.killed_reason: str | None = None
        self._cpu = CpuLedger()
        self.t_launch = time.monotonic()
        self.proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=stdout, stderr=stderr,
                                     start_new_session=True)
        self.period = period
        self.samples: list[Sample] = []
        self.t_workload: float | None = None
        self.workload_pids: set[int] = set()
        self.rusage = None
        self.status = None
        self.stderr_text = ""
        self.t_end: float | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _tool_pids(self) -> list[int]:
        pids = descendants(self.proc.pid)
        if self.workload:
            for p in pids:
                if p in self.workload_pids:
                    continue
                c = cmdline(p)
                if c and any(self.workload in a for a in c[:3]) and p != self.proc.pid:
                    self.workload_pids.add(p)
                    if self.t_workload is None:
                        self.t_workload = time.monotonic()
        return [p for p in pids if p not in self.workload_pids]

    def snapshot(self) -> "Sample":
        """CPU and memory of the tool's processes now (see Sample)."""
        pids = self._tool_pids()
        t = time.monotonic()
        fine, coarse, procs = self._cpu.look(pids)
        rss = sum(status_kb(p, "VmRSS") for p in pids)
        hwm = sum(status_kb(p, "VmHWM") for p in pids)
        return Sample(t, fine, coarse, procs, rss, hwm)

    def _loop(self):
        # Never proc.poll() here: wait() reaps the tool itself with wait4, for its rusage.
        while not self._stop.is_set():
            s = self.snapshot()
            with self._lock:
                if s.rss_kb > 0:
                    self.samples.append(s)
            if self.rss_limit_kb and s.rss_kb > self.rss_limit_kb and self.killed_reason is None:
                # The machine is shared: a tool whose memory runs away is stopped, and says so.
                self.killed_reason = (f"stopped by the suite when its RSS passed "
                                      f"{self.rss_limit_kb / 1048576:.0f} GB "
                                      f"after {s.t - self.t_launch:.1f} s")
                self.kill()
            self._stop.wait(self.period)

    def wait(self, timeout: float | None = None):
        if self.proc.stderr is not None:
            # Read stderr in a thread so that a chatty tool never blocks on a full pipe.
            chunks = []
            reader = threading.Thread(target=lambda: chunks.append(self.proc.stderr.read()),
                                      daemon=True)
            reader.start()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            pid, status, ru = os.wait4(self.proc.pid, os.WNOHANG)
            if pid == self.proc.pid:
                break
            if deadline is not None and time.monotonic() > deadline:
                if self.killed_reason is None:
                    self.killed_reason = f"stopped by the suite after {timeout:.0f} s"
                self.kill()
                pid, status, ru = os.wait4(self.proc.pid, 0)
                break
            time.sleep(0.01)
        self.t_end = time.monotonic()
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        self.status, self.rusage = self.proc.returncode, ru
        self._stop.set()
        self._thread.join()
        if self.proc.stderr is not None:
            reader.join(timeout=5)
            self.stderr_text = (chunks[0] if chunks else b"").decode("utf-8", "replace")
        return self.status

    def kill(self, sig=signal.SIGKILL):
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def at(self, t: float):
        """The last sample taken at or before monotonic time t."""
        with self._lock:
            best = None
            for s in self.samples:
                if s.t <= t:
                    best = s
            return best

    def peak_hwm_kb(self) -> int:
        with self._lock:
            return max((s.hwm_kb for s in self.samples), default=0)

    def cpu_per_wall_s(self, start: float, end: float) -> float | None:
        """CPU seconds per wall second of the tool between two instants (samples nearest
        before them)."""
        a, b = self.at(start), self.at(end)
        if a is None or b is None or b.t - a.t < 1.0:
            return None
        return cpu_between(a, b) / (b.t - a.t)


def run_timed(cmd, env, cwd=None, stdout=subprocess.DEVNULL, timeout=600):
    """Runs cmd; returns (wall seconds, exit status, rusage of it and its reaped children)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=stdout, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    return wall, p.returncode, ru


def free_port() -> int:
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def rmtree(p):
    shutil.rmtree(p, ignore_errors=True)
