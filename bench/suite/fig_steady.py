"""Sampler CPU per wall second and memory of a long run, 8 fake GPUs, 20 µs per NVML call.

Every tool measures `sleep D` at its default settings; the tools run side by side (their CPU
time, not their wall time, is the figure, so they see the same machine at the same moment).
CPU time is read from /proc/PID/task/*/schedstat (nanoseconds) of the tool's processes (the
workload excluded) from 2 s after the workload started to 1 s before it ends, so start-up and
shutdown are left out.  Memory: the peak of the tool's resident set (VmHWM, summed over its
processes), and VmRSS early and late in the run to show growth.

Also: `joules serve` idle (its default 1 s interval) and `matcha run --prometheus` (100 ms);
two floors, side by side with the tools: any 100 ms sampler on this machine (bench/floor/wake.c:
a thread that only wakes up every 100 ms) and any that reads these GPUs the way joules does
(bench/floor/read_nvml.cpp: that thread making joules' one NVML call per GPU, and nothing else);
scaling of the sampler cost with 1, 8 and 64 GPUs (joules, matcha, the bare reader, each run
alone, so that no tool's readings fall on another's, which made the side-by-side runs at 64 GPUs
vary by a third); the same with an energy counter that costs 3.9 ms of CPU a read, as an H100's
does (docs/nvml-notes.md §2.4; the fake NVML spins that long), 1 and 8 GPUs; and joules' memory
against run length: an hour of readings at the default 100 ms (36,000) taken in 36 s by reading
every millisecond, against 600 and 6,000 readings.  The fake NVML's clock is the machine's, so
a run is not sped up as a whole; what grows with run length is the number of readings."""
from __future__ import annotations

import signal
import subprocess
import time

from . import tools
from .common import (JOULES, ROOT, TOOLS, VENV, Watched, constant_scenario, fake_env, free_port,
                     ratio, rmtree, summary)
from .render import fmt_mb, fmt_pct, fmt_ratio, fmt_spread

NAME = "steady"
FLOOR_WAKE = "floor: wake-up"
FLOOR_READ = "floor: reader"
COSTLY_COUNTER_US = 3900


def _batch(ctx, entries, seconds, env):
    """entries: {label: argv-builder}; runs them side by side; returns per-label measurements."""
    watched = {}
    for label, (argv, cwd, workload) in entries.items():
        watched[label] = Watched(label, argv, env, cwd=cwd, workload=workload, period=0.5)
    results = {}
    t_stop = time.monotonic() + seconds + 60
    for label, w in watched.items():
        if w.workload is None:  # a server: stop it once it has run for `seconds`
            while time.monotonic() < w.t_launch + seconds + 1:
                time.sleep(0.2)
            w.kill(signal.SIGTERM)
        w.wait(timeout=max(5.0, t_stop - time.monotonic()))
    for label, w in watched.items():
        t0 = (w.t_workload if w.workload else w.t_launch + 3.0)
        if t0 is None:
            results[label] = {"error": f"its workload never started (exit {w.status}): "
                                       + w.stderr_text.strip()[-300:]}
            continue
        end = (t0 + seconds - 1.0) if w.workload else (w.t_launch + seconds)
        early, late = w.at(t0 + 2.0), w.at(end)
        results[label] = {
            "cpu_per_wall_s": w.cpu_per_wall_s(t0 + 2.0, end),
            "peak_rss_kb": w.peak_hwm_kb(),
            "rss_early_kb": early.rss_kb if early else None,
            "rss_late_kb": late.rss_kb if late else None,
            "early_to_late_s": (late.t - early.t) if early and late else None,
            "exit_status": w.status,
        }
    return results


def _run_entries(ctx, gpus_tools, seconds):
    entries, dirs = {}, []
    for label, tool in gpus_tools.items():
        d = ctx.tmpdir(f"steady-{label}")
        dirs.append(d)
        argv, cwd = tools.run_argv(tool, ["sleep", str(seconds)], d)
        entries[label] = (argv, cwd, "sleep")
    return entries, dirs


def run(ctx) -> dict:
    seconds = 15 if ctx.quick else 60
    reps = 1 if ctx.quick else 2
    env = fake_env(constant_scenario(8))
    wake, reader = _floors(ctx)
    per = {}
    for r in range(reps):
        ctx.log(f"steady: {seconds} s run {r + 1}/{reps}, all tools side by side")
        entries, dirs = _run_entries(ctx, {t: t for t in TOOLS}, seconds)
        d = ctx.tmpdir("steady-matcha-prom")
        dirs.append(d)
        entries["matcha --prometheus"] = (
            [str(VENV / "bin" / "matcha"), "run", "--prometheus", f"127.0.0.1:{free_port()}",
             "--", "sleep", str(seconds)], None, "sleep")
        entries["joules serve"] = ([str(JOULES), "serve", "--listen", "127.0.0.1:0"], None, None)
        entries[FLOOR_WAKE] = ([str(wake), "100", str(seconds + 30)], None, None)
        entries[FLOOR_READ] = ([str(reader), "100", str(seconds + 30)], None, None)
        res = _batch(ctx, entries, seconds, env)
        for label, m in res.items():
            per.setdefault(label, []).append(m)
        for d in dirs:
            rmtree(d)

    def agg(label, key):
        return summary([m.get(key) for m in per.get(label, []) if "error" not in m])

    out = {}
    for label, runs in per.items():
        out[label] = {k: agg(label, k) for k in ("cpu_per_wall_s", "peak_rss_kb", "rss_early_kb",
                                                  "rss_late_kb", "early_to_late_s")}
        errs = [m["error"] for m in runs if "error" in m]
        if errs:
            out[label]["errors"] = errs

    # Scaling with the number of GPUs: each tool alone, one after the other.
    sseconds = 10 if ctx.quick else 12
    scaling, scaling_rss = {}, {}
    for gpus in (1, 8, 64):
        ctx.log(f"steady: {sseconds} s with {gpus} GPUs (joules, matcha, the bare reader; "
                "each alone)")
        genv = fake_env(constant_scenario(gpus))
        scaling[str(gpus)], scaling_rss[str(gpus)] = {}, {}
        for tool in ("joules", "matcha", "reader"):
            if tool == "reader":
                entries, dirs = {tool: ([str(reader), "100", str(sseconds + 30)], None, None)}, []
            else:
                entries, dirs = _run_entries(ctx, {tool: tool}, sseconds)
            res = _batch(ctx, entries, sseconds, genv)[tool]
            scaling[str(gpus)][tool] = res.get("cpu_per_wall_s")
            scaling_rss[str(gpus)][tool] = res.get("peak_rss_kb")
            for d in dirs:
                rmtree(d)
    # An H100's counter: 3.9 ms of CPU a read (power 20 µs, as every other call here).
    costly = {}
    for gpus in (1, 8):
        ctx.log(f"steady: {sseconds} s with {gpus} GPUs whose counter costs 3.9 ms a read "
                "(joules, matcha; each alone)")
        cenv = fake_env(constant_scenario(gpus, counter_cpu_us=COSTLY_COUNTER_US))
        costly[str(gpus)] = {}
        for tool in ("joules", "matcha"):
            entries, dirs = _run_entries(ctx, {tool: tool}, sseconds)
            costly[str(gpus)][tool] = _batch(ctx, entries, sseconds, cenv)[tool].get(
                "cpu_per_wall_s")
            for d in dirs:
                rmtree(d)
    floor = {"cpu_per_wall_s": out.get(FLOOR_WAKE, {}).get("cpu_per_wall_s", {}).get("median"),
             "reader_cpu_per_wall_s":
                 out.get(FLOOR_READ, {}).get("cpu_per_wall_s", {}).get("median"),
             "runs": out.get(FLOOR_WAKE, {}).get("cpu_per_wall_s", {}).get("n"),
             "period_ms": 100}
    return {"tools": out, "scaling_gpus_cpu": scaling, "scaling_gpus_rss_kb": scaling_rss,
            "costly_counter_cpu": costly, "floor": floor, "run_length": _run_length(ctx, env),
            "conditions": {"gpus": 8, "latency_us": 20, "seconds": seconds, "repetitions": reps,
                           "scaling_seconds": sseconds, "scaling": "each tool alone",
                           "intervals": tools.DEFAULT_INTERVAL}}


def _floors(ctx):
    """The two floors' executables: bench/floor/wake.c and bench/floor/read_nvml.cpp."""
    d = ctx.tmpdir("floor")
    wake, reader = d / "wake", d / "read_nvml"
    subprocess.run(["cc", "-O2", "-o", str(wake), str(ROOT / "bench" / "floor" / "wake.c")],
                   check=True)
    subprocess.run(["c++", "-std=c++20", "-O2", "-I", str(ROOT / "src"), "-o", str(reader),
                    str(ROOT / "bench" / "floor" / "read_nvml.cpp"), "-ldl"], check=True)
    return wake, reader


def _run_length(ctx, env) -> dict:
    """joules' memory against the number of readings: read every 1 ms, 36 s hold the readings of
    an hour at the default 100 ms.  joules keeps the last 10 s of readings (whatever the
    interval) while no boundary waits for its energy, so the resident set must be flat from
    about 10 s on: it is read at 12 s, 24 s and at the end."""
    seconds = 36.0
    d = ctx.tmpdir("length")
    argv = [str(JOULES), "run", "-q", "--interval", "1", "-o", str(d / "joules.jsonl"), "--",
            "sleep", str(seconds)]
    ctx.log(f"steady: 36,000 readings of 8 GPUs in {seconds:.0f} s (joules --interval 1)")
    w = Watched("joules", argv, env, workload="sleep", period=0.25)
    w.wait(timeout=seconds + 60)
    t0 = w.t_workload
    points = {}
    for at in (12.0, 24.0, seconds - 0.5):
        smp = w.at(t0 + at) if t0 else None
        points[f"{at:.0f}"] = smp.rss_kb if smp else None
    rmtree(d)
    return {"readings": 36000, "interval_ms": 1, "rss_kb_at_s": points,
            "peak_rss_kb": w.peak_hwm_kb(), "exit_status": w.status}


def tables(res: dict) -> list[dict]:
    t = res["tools"]
    jc = t["joules"]["cpu_per_wall_s"]["median"]
    jm = t["joules"]["peak_rss_kb"]["median"]
    rows_cpu, rows_mem = [], []
    labels = TOOLS + ["joules serve", "matcha --prometheus"]
    for label in labels:
        if label not in t:
            continue
        m = t[label]
        c, p = m["cpu_per_wall_s"], m["peak_rss_kb"]
        if c["n"] == 0:
            why = "; ".join(m.get("errors", ["no run"]))[:200]
            rows_cpu.append([label, "cannot: " + why, "", "", "", ""])
            rows_mem.append([label, "cannot: " + why, "", "", "", ""])
            continue
        interval = tools.DEFAULT_INTERVAL.get(label, "")
        if label == "joules serve":
            interval = "1 s sampler, idle (no scrapes)"
        if label == "matcha --prometheus":
            interval = "100 ms poller + HTTP thread"
        rows_cpu.append([label, fmt_pct(c["median"] * 100), fmt_spread(c, lambda x: fmt_pct(x * 100)),
                         str(c["n"]), interval,
                         "1×" if label == "joules" else fmt_ratio(ratio(c["median"], jc))])
        g_e, g_l = m["rss_early_kb"]["median"], m["rss_late_kb"]["median"]
        dt = m["early_to_late_s"]["median"]
        growth = "–" if None in (g_e, g_l, dt) else f"{(g_l - g_e):+,.0f} kB over {dt:.0f} s"
        rows_mem.append([label, fmt_mb(p["median"]), fmt_spread(p, fmt_mb), growth,
                         "1×" if label == "joules" else fmt_ratio(ratio(p["median"], jm)),
                         str(p["n"])])
    sc, sr = res["scaling_gpus_cpu"], res["scaling_gpus_rss_kb"]
    counts = ("1", "8", "64")

    def cpu_cell(g, tool):
        v = sc[g].get(tool)
        return fmt_pct(v * 100 if v is not None else None)

    def above_reader(g):
        # CPU seconds per second over (readings per second × GPUs), in µs.
        j, r = sc[g].get("joules"), sc[g].get("reader")
        if j is None or r is None:
            return "–"
        return f"{(j - r) * 1e6 / (10 * int(g)):+.1f} µs"

    srows = []
    for tool in ("joules", "matcha"):
        srows.append([f"{tool} CPU"] + [cpu_cell(g, tool) for g in counts])
        srows.append([f"{tool} peak RSS"] + [fmt_mb(sr[g].get(tool)) for g in counts])
    srows.append(["bare reader CPU (bench/floor/read_nvml.cpp)"]
                 + [cpu_cell(g, "reader") for g in counts])
    srows.append(["joules − bare reader, per GPU and reading"] + [above_reader(g) for g in counts])
    crows = []
    costly = res.get("costly_counter_cpu", {})
    if costly:
        ccounts = [g for g in ("1", "8") if g in costly]
        for tool in ("joules", "matcha"):
            crows.append([f"{tool} CPU"] + [fmt_pct(costly[g][tool] * 100)
                                            if costly[g].get(tool) is not None else "–"
                                            for g in ccounts])
        crows.append(["matcha ÷ joules"] + [fmt_ratio(ratio(costly[g].get("matcha"),
                                                             costly[g].get("joules")))
                                           for g in ccounts])
    floor = res.get("floor", {})
    if floor.get("cpu_per_wall_s") is not None:
        rows_cpu.append(["(floor: a thread that only wakes up every 100 ms)",
                         fmt_pct(floor["cpu_per_wall_s"] * 100), "", str(floor.get("runs", "")),
                         "bench/floor/wake.c",
                         ""])
    if floor.get("reader_cpu_per_wall_s") is not None:
        rows_cpu.append(["(floor: that thread reading the 8 GPUs as joules does, nothing else)",
                         fmt_pct(floor["reader_cpu_per_wall_s"] * 100), "",
                         str(floor.get("runs", "")), "bench/floor/read_nvml.cpp", ""])
    lrows = []
    length = res.get("run_length", {})
    if length.get("rss_kb_at_s"):
        pts = length["rss_kb_at_s"]
        keys = list(pts)
        growth = (None if None in (pts[keys[0]], pts[keys[-1]])
                  else f"{pts[keys[-1]] - pts[keys[0]]:+,.0f} kB")
        lrows.append(["36,000 (an hour at 100 ms)"] + [fmt_mb(pts[k]) for k in keys]
                     + [growth or "–", fmt_mb(length.get("peak_rss_kb"))])
    sec = res["conditions"]["seconds"]
    extra = []
    if lrows:
        extra.append({"title": "joules' memory against run length: 8 GPUs read every 1 ms, so "
                               "that 36 s hold the readings of an hour at the default 100 ms",
                      "columns": ["readings", "RSS at 12 s", "at 24 s", "at the end",
                                  "growth, 12 s → end", "peak RSS"],
                      "rows": lrows})
    return [
        {"title": f"Sampler CPU per wall second (% of one core) during `TOOL -- sleep {sec}`, "
                  "8 GPUs, 20 µs per NVML call",
         "columns": ["tool", "CPU (median)", "spread (min–max)", "runs", "sampling", "peer ÷ joules"],
         "rows": rows_cpu},
        {"title": f"Memory during `TOOL -- sleep {sec}`",
         "columns": ["tool", "peak RSS (median)", "spread", "RSS growth, early → late",
                     "peer ÷ joules", "runs"],
         "rows": rows_mem},
        {"title": "Sampler cost against the number of GPUs (each tool alone, one "
                  f"{res['conditions']['scaling_seconds']} s run per cell)",
         "columns": ["", "1 GPU", "8 GPUs", "64 GPUs"], "rows": srows},
    ] + ([{"title": "Sampler CPU with an energy counter that costs 3.9 ms of CPU a read, as an "
                     "H100's does (each tool alone, one "
                     f"{res['conditions']['scaling_seconds']} s run per cell)",
           "columns": ["", "1 GPU", "8 GPUs"], "rows": crows}] if crows else []) + extra

