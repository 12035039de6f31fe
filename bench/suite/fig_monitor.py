"""CPU cost of `joules monitor` (on a pipe and full screen) and of `matcha monitor`, and the wall
time of `joules doctor`: 8 fake GPUs, 20 µs per NVML call.

Each view runs for a while with the same interval as its peer, side by side with it (joules and
matcha at once, so that both see the same machine); CPU time is read from
/proc/PID/task/*/schedstat (nanoseconds) of the process tree, from 3 s after the start to the
end, so start-up is left out.  "pipe": the output is a pipe that the suite drains (joules prints
plain lines; matcha prints its ANSI table regardless).  "terminal": each runs in a tmux pane of
160x80 (joules draws its full-screen view).  NVML calls per GPU per second come from the fake
library's call log.  `joules doctor --json` is run repeatedly, alone; its wall time (the goal is
under 200 ms) and CPU time (rusage) are quoted, also with one GPU that answers each call after
200 ms.  matcha has no counterpart of doctor."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import threading
import time

from .common import (JOULES, VENV, CpuLedger, Sample, cpu_between, descendants, fake_env,
                     median, ratio, rmtree, run_timed, status_kb, summary)
from .render import fmt_ms, fmt_pct, fmt_ratio, fmt_spread

NAME = "monitor"
GPUS = 8
LATENCY_US = 20
INTERVALS_MS = (500, 100)
MATCHA = VENV / "bin" / "matcha"
DOCTOR_GOAL_S = 0.200
SKIP_S = 3.0  # start-up left out of the CPU figures


def _scenario(slow_gpu: bool = False) -> dict:
    devices = [{"latency_us": LATENCY_US, "power": {"type": "constant", "watts": 300 + 10 * i},
                "health": {"gpu_util_percent": 90, "sm_util_percent": 80},
                "processes": [{"pid": 1, "used_memory_bytes": 1 << 30}]} for i in range(GPUS)]
    if slow_gpu:
        devices[-1]["latency_us"] = 200_000
    return {"devices": devices}


class _Tree:
    """CPU time of a running process and its descendants, sampled every `period` s from a
    thread (threads that end between two looks keep their last reading; the clock-tick count of
    the processes catches what the looks miss, as in common.Watched)."""

    def __init__(self, pid: int, period: float = 0.5):
        self.pid, self.period = pid, period
        self.samples: list[Sample] = []
        self._cpu = CpuLedger()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _look(self) -> Sample:
        pids = descendants(self.pid)
        fine, coarse, procs = self._cpu.look(pids)
        rss = sum(status_kb(p, "VmRSS") for p in pids)
        return Sample(time.monotonic(), fine, coarse, procs, rss, 0)

    def _loop(self):
        while not self._stop.is_set():
            s = self._look()
            if s.rss_kb > 0:
                self.samples.append(s)
            self._stop.wait(self.period)

    def stop(self):
        self._stop.set()
        self._thread.join()

    def cpu_per_wall_s(self, start: float) -> float | None:
        """CPU seconds per wall second from the first look at or after `start` to the last."""
        after = [s for s in self.samples if s.t >= start]
        if len(after) < 2 or after[-1].t - after[0].t < 1.0:
            return None
        return cpu_between(after[0], after[-1]) / (after[-1].t - after[0].t)


def _calls_per_gpu_s(log: str, wall_s: float) -> float | None:
    """NVML calls on devices per GPU per second, from the fake library's call log."""
    try:
        lines = open(log).read().splitlines()
    except OSError:
        return None
    if not lines or wall_s <= 0:
        return None
    calls = json.loads(lines[-1])["calls"]
    per_device = sum(n for name, n in calls.items()
                     if name.startswith(("nvmlDevice", "nvmlGpm")) and "Handle" not in name
                     and "Count" not in name)
    return per_device / GPUS / wall_s


class _Launched:
    """One view started on a pipe (drained by a thread) or in a tmux pane of its own server."""

    def __init__(self, argv: list[str], env: dict, terminal: bool, work):
        self.terminal, self.env = terminal, env
        self.t0 = time.monotonic()
        if terminal:
            self.sock = f"bench-monitor-{os.getpid()}-{id(self)}"
            script = work / f"{self.sock}.sh"
            script.write_text("".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items()
                                      if k.startswith(("FAKE_NVML", "JOULES_", "LD_LIBRARY_PATH",
                                                       "PATH", "PYTHON")))
                              + "exec " + " ".join(map(shlex.quote, argv)) + "\n")
            subprocess.run(self._tmux("new-session", "-d", "-x", "160", "-y", "80",
                                      f"sh {shlex.quote(str(script))}"), check=True, env=env)
            out = subprocess.run(self._tmux("display-message", "-p", "#{pane_pid}"),
                                 capture_output=True, text=True, check=True)
            self.pid = int(out.stdout.strip())
            self.proc = None
        else:
            r, w = os.pipe()
            self.proc = subprocess.Popen(argv, env=env, stdout=w, stderr=subprocess.DEVNULL,
                                         start_new_session=True)
            os.close(w)
            self._reader = threading.Thread(target=self._drain, args=(r,), daemon=True)
            self._reader.start()
            self.pid = self.proc.pid
        self.tree = _Tree(self.pid)

    def _tmux(self, *args):
        return ["tmux", "-L", self.sock, "-f", "/dev/null", *args]

    @staticmethod
    def _drain(fd):
        with os.fdopen(fd, "rb", buffering=0) as f:
            while f.read(65536):
                pass

    def stop(self) -> tuple[float | None, float]:
        """SIGINT (what a person's Ctrl-C sends), then the CPU figure and the run's length."""
        cpu = self.tree.cpu_per_wall_s(self.t0 + SKIP_S)
        self.tree.stop()
        wall = time.monotonic() - self.t0
        try:
            os.kill(self.pid, signal.SIGINT)
        except ProcessLookupError:
            pass
        if self.proc is not None:
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self._reader.join(timeout=5)
        else:
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and os.path.exists(f"/proc/{self.pid}"):
                time.sleep(0.05)
            subprocess.run(self._tmux("kill-server"), capture_output=True)
        return cpu, wall


def _views(ctx, seconds: float, reps: int) -> dict:
    have_tmux = shutil.which("tmux") is not None
    out = {}
    errors = {}
    for mode in ("pipe", "terminal"):
        for interval in INTERVALS_MS:
            for r in range(reps):
                ctx.log(f"monitor: {mode}, {interval} ms, run {r + 1}/{reps}, joules and matcha "
                        f"side by side for {seconds:.0f} s")
                work = ctx.tmpdir("monitor")
                running = {}
                for tool in ("joules", "matcha"):
                    key = f"{tool} {mode} {interval}"
                    out.setdefault(key, {"cpu": [], "calls_per_gpu_s": []})
                    if mode == "terminal" and not have_tmux:
                        errors[key] = "tmux is not installed"
                        continue
                    if tool == "matcha" and not MATCHA.exists():
                        errors[key] = f"{MATCHA} is missing"
                        continue
                    log = str(work / f"{tool}-calls.jsonl")
                    env = fake_env(_scenario(), extra={"FAKE_NVML_CALL_LOG": log})
                    if tool == "joules":
                        argv = [str(JOULES), "monitor", "--interval", str(interval)]
                        if mode == "pipe":
                            argv.append("--plain")
                    else:
                        argv = [str(MATCHA), "monitor", "--interval", str(interval)]
                    running[key] = (_Launched(argv, env, mode == "terminal", work), log)
                time.sleep(seconds + SKIP_S)
                for key, (view, log) in running.items():
                    cpu, wall = view.stop()
                    if cpu is None:
                        errors[key] = "no CPU figure: it did not keep running"
                        continue
                    out[key]["cpu"].append(cpu)
                    calls = _calls_per_gpu_s(log, wall)
                    if calls is not None:
                        out[key]["calls_per_gpu_s"].append(calls)
                rmtree(work)
    res = {k: {"cpu_per_wall_s": summary(v["cpu"]),
               "nvml_calls_per_gpu_s": median(v["calls_per_gpu_s"])} for k, v in out.items()}
    return res, errors


def _doctor(ctx, runs: int, slow_gpu: bool) -> dict:
    env = fake_env(_scenario(slow_gpu))
    walls, cpus, statuses = [], [], []
    for _ in range(runs):
        wall, status, ru = run_timed([str(JOULES), "doctor", "--json"], env)
        walls.append(wall)
        cpus.append(ru.ru_utime + ru.ru_stime)
        statuses.append(status)
    return {"wall_s": summary(walls), "cpu_s": summary(cpus), "exit_statuses": sorted(set(statuses))}


def run(ctx) -> dict:
    seconds = 8.0 if ctx.quick else 12.0
    reps = 1 if ctx.quick else 2
    views, errors = _views(ctx, seconds, reps)
    ctx.log("monitor: joules doctor, 8 GPUs")
    doctor = _doctor(ctx, 5 if ctx.quick else 20, slow_gpu=False)
    ctx.log("monitor: joules doctor, one GPU at 200 ms per call")
    doctor_slow = _doctor(ctx, 1 if ctx.quick else 3, slow_gpu=True)
    ratios, per_call = {}, {}
    for mode in ("pipe", "terminal"):
        for interval in INTERVALS_MS:
            j = views[f"joules {mode} {interval}"]
            m = views[f"matcha {mode} {interval}"]
            ratios[f"{mode} {interval}"] = ratio(m["cpu_per_wall_s"]["median"],
                                                 j["cpu_per_wall_s"]["median"])
            # CPU per NVML call: what each tool spends around a reading, whatever it reads.
            for tool, x in (("joules", j), ("matcha", m)):
                cpu, calls = x["cpu_per_wall_s"]["median"], x["nvml_calls_per_gpu_s"]
                x["cpu_us_per_nvml_call"] = (None if cpu is None or not calls
                                             else cpu * 1e6 / (calls * GPUS))
            per_call[f"{mode} {interval}"] = ratio(m["cpu_us_per_nvml_call"],
                                                   j["cpu_us_per_nvml_call"])
    return {"views": views, "errors": errors, "matcha_over_joules": ratios,
            "matcha_over_joules_per_nvml_call": per_call,
            "doctor": doctor, "doctor_one_slow_gpu": doctor_slow,
            "doctor_goal_s": DOCTOR_GOAL_S,
            "cannot": {"matcha doctor": "matcha has no command that checks a machine (its "
                                        "commands: run, wrap, diff, monitor)",
                       "zeus, codecarbon, carbontracker": "no live view and no machine check"},
            "conditions": {"gpus": GPUS, "latency_us": LATENCY_US, "seconds": seconds,
                           "repetitions": reps, "intervals_ms": list(INTERVALS_MS),
                           "terminal": "tmux 160x80", "start_up_left_out_s": SKIP_S}}


def tables(res: dict) -> list[dict]:
    v, c = res["views"], res["conditions"]
    rows = []
    for mode in ("pipe", "terminal"):
        for interval in INTERVALS_MS:
            row = [mode, f"{interval} ms"]
            for tool in ("joules", "matcha"):
                key = f"{tool} {mode} {interval}"
                s = v.get(key, {}).get("cpu_per_wall_s", {"n": 0})
                if s["n"] == 0:
                    row += ["failed: " + res["errors"].get(key, "no run"), "", ""]
                    continue
                spread = "" if s["n"] < 2 else " (" + fmt_spread(s, lambda x: fmt_pct(x * 100)) + ")"
                calls = v[key]["nvml_calls_per_gpu_s"]
                us = v[key].get("cpu_us_per_nvml_call")
                row += [fmt_pct(s["median"] * 100) + spread,
                        "–" if calls is None else f"{calls:.0f}",
                        "–" if us is None else f"{us:.1f} µs"]
            key = f"{mode} {interval}"
            row += [fmt_ratio(res["matcha_over_joules"][key]),
                    fmt_ratio(res.get("matcha_over_joules_per_nvml_call", {}).get(key))]
            rows.append(row)
    d, ds = res["doctor"], res["doctor_one_slow_gpu"]
    goal = res["doctor_goal_s"]
    met = d["wall_s"]["median"] is not None and d["wall_s"]["median"] < goal
    drows = [
        [f"{GPUS} GPUs at {LATENCY_US} µs per call", fmt_ms(d["wall_s"]["median"]),
         fmt_spread(d["wall_s"], fmt_ms), fmt_ms(d["cpu_s"]["median"]), str(d["wall_s"]["n"]),
         ", ".join(map(str, d["exit_statuses"])), "cannot"],
        [f"{GPUS - 1} GPUs at {LATENCY_US} µs, one at 200 ms per call",
         fmt_ms(ds["wall_s"]["median"]), fmt_spread(ds["wall_s"], fmt_ms),
         fmt_ms(ds["cpu_s"]["median"]), str(ds["wall_s"]["n"]),
         ", ".join(map(str, ds["exit_statuses"])), "cannot"],
    ]
    return [
        {"title": f"CPU of a live view (% of one core; median, min – max of "
                  f"{c['repetitions']} runs of {c['seconds']:.0f} s), {GPUS} GPUs at "
                  f"{LATENCY_US} µs per NVML call",
         "columns": ["output", "interval", "joules CPU", "NVML calls / GPU / s",
                     "CPU / NVML call", "matcha CPU", "NVML calls / GPU / s", "CPU / NVML call",
                     "matcha ÷ joules, CPU", "matcha ÷ joules, per call"],
         "rows": rows,
         "notes": ["joules reads power, energy and the health of docs/monitor-doctor.md "
                   "per GPU each interval in 11 NVML calls (error counters, PCIe width, "
                   "persistence mode and processes at most 5 s apart, 5 calls more) and draws "
                   "the view; matcha reads power, utilisation, temperature and memory in 4. "
                   "Below 1× matcha costs less. Both "
                   "default to 500 ms. A fake NVML call sleeps 20 µs: the CPU per call is the "
                   "tool's own work around it plus the kernel's cost of the sleep."]},
        {"title": "`joules doctor --json` (wall time and CPU per run)",
         "columns": ["GPUs", "wall (median)", "wall (min – max)", "CPU (median)", "runs",
                     "exit status", "matcha"],
         "rows": drows,
         "notes": [f"Goal: under {goal * 1000:.0f} ms with {GPUS} GPUs: "
                   f"{'met' if met else 'not met'}. A driver slower than 10 ms per reading is "
                   "reported (`slow_driver`) and its GPU is not asked the slow questions.",
                   "Peers: cannot — " + "; ".join(f"{k}: {w}" for k, w in res["cannot"].items())
                   + "."]},
    ]
