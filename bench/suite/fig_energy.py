"""Total-energy error against the scenario's exact integral, for a GPU with an energy counter
(Hopper, counter advancing every 100 ms) and one without (Pascal: power polling only).

8 fake GPUs, 20 µs per NVML call, each drawing power piecewise constant on 20 ms segments between
100 and 700 W for 10 s and 1 mW before and after: the exact energy is then the same (to ~1e-6)
for every measurement window that covers those 10 s, whatever each tool's start-up and shutdown
time.  The busy interval starts 16 s after the tools are launched (all side by side); the
workload ends 2 s after it.  A tool whose workload started after the busy interval began is
reported as such.  One more run has GPUs that read exactly 0 W when idle (a power-gated or
virtual GPU): joules mishandles that case (see docs/benchmarks.md)."""
from __future__ import annotations

import time

from . import tools
from .common import (CHILDREN, SYS_PY, TOOLS, Watched, fake, fake_env, power_segments, ratio,
                     rmtree, summary)
from .render import fmt_pct, fmt_ratio, fmt_spread

NAME = "energy"
KINDS = {"counter": {"architecture": "hopper", "energy_counter": {"update_ms": 100}},
         "polled": {"architecture": "pascal"},
         "counter_zero_idle": {"architecture": "hopper", "energy_counter": {"update_ms": 100}}}
IDLE_W = {"counter": 0.001, "polled": 0.001, "counter_zero_idle": 0.0}


def _one(ctx, kinds: list[str], seed: int, lead_s: float, busy_s: float) -> dict:
    """One batch: every tool on every scenario of kinds, all side by side."""
    launch_ns = time.monotonic_ns()
    epoch_ns = launch_ns - 10 * 10**9
    t0 = 10.0 + lead_s  # scenario time at which the GPUs start drawing power
    end_ns = epoch_ns + int((t0 + busy_s + 2.0) * 1e9)
    workload = [SYS_PY, str(CHILDREN / "sleep_until.py"), str(end_ns)]
    watched, dirs, envs, truth = {}, {}, {}, {}
    for kind in kinds:
        devices = [dict(KINDS[kind], power=power_segments(seed * 100 + i, busy_s, start_s=t0,
                                                          idle_w=IDLE_W[kind]))
                   for i in range(8)]
        sc = {"latency_us": 20, "devices": devices}
        envs[kind] = fake_env(sc, epoch_ns=epoch_ns)
        # Over [launch, workload end]: covers every tool's window but for ~1e-6 of idle energy.
        truth[kind] = sum(d.energy_j(t0 + busy_s + 2.0) - d.energy_j(10.0)
                          for d in fake.load(sc).devices)
        for tool in TOOLS:
            d = ctx.tmpdir(f"energy-{kind}-{tool}")
            dirs[kind, tool] = d
            argv, cwd = tools.run_argv(tool, workload, d)
            watched[kind, tool] = Watched(tool, argv, envs[kind], cwd=cwd,
                                          workload="sleep_until.py", period=0.25)
    for w in watched.values():
        w.wait(timeout=lead_s + busy_s + 120)
    busy_start = epoch_ns / 1e9 + t0
    out = {k: {} for k in kinds}
    for (kind, tool), w in watched.items():
        e, why = tools.energy_j(tool, dirs[kind, tool], envs[kind])
        late = w.t_workload is not None and w.t_workload > busy_start
        # What this setup cannot resolve: idle energy inside or outside a tool's window (its
        # start-up, at most lead_s; its shutdown, a few s) and the counter's millijoule floor.
        res_j = 8 * (IDLE_W[kind] * (lead_s + 7.0) + 0.002)
        rec = {"energy_j": e, "truth_j": truth[kind], "exit_status": w.status,
               "resolution_percent": res_j / truth[kind] * 100.0,
               "error_percent": None if e is None else (e - truth[kind]) / truth[kind] * 100.0,
               "workload_started_after_busy_start_s":
                   None if w.t_workload is None else w.t_workload - busy_start}
        if why:
            rec["why"] = why + ("; stderr: " + w.stderr_text.strip()[-300:] if w.stderr_text else "")
        if late:
            rec["late"] = True
        out[kind][tool] = rec
        rmtree(dirs[kind, tool])
    return out


def run(ctx) -> dict:
    reps = 1 if ctx.quick else 2
    lead, busy = (14.0, 5.0) if ctx.quick else (16.0, 10.0)
    per = {k: {t: [] for t in TOOLS} for k in KINDS}
    # One scenario per batch: ten Python-heavy start-ups at once on two cores made the slowest
    # peers miss the start of the busy interval.
    batches = [["counter"], ["polled"]] * reps + [["counter_zero_idle"]]
    for r, kinds in enumerate(batches):
        ctx.log(f"energy: {' + '.join(kinds)} GPUs, batch {r + 1}/{len(batches)} "
                f"({lead + busy + 2:.0f} s, {5 * len(kinds)} tools side by side)")
        res = _one(ctx, kinds, seed=11 + r, lead_s=lead, busy_s=busy)
        for kind, by_tool in res.items():
            for tool, rec in by_tool.items():
                per[kind][tool].append(rec)
    out = {}
    for kind, by_tool in per.items():
        out[kind] = {}
        for tool, recs in by_tool.items():
            ok = [r for r in recs if r["error_percent"] is not None and not r.get("late")]
            out[kind][tool] = {
                "error_percent": summary([r["error_percent"] for r in ok]),
                "abs_error_percent": summary([abs(r["error_percent"]) for r in ok]),
                "resolution_percent": max((r["resolution_percent"] for r in recs), default=None),
                "runs": recs,
            }
    return {"kinds": out, "conditions": {"gpus": 8, "latency_us": 20, "busy_s": busy,
                                         "lead_s": lead, "repetitions": reps,
                                         "power": "20 ms segments, 100-700 W, 0 W outside"}}


def _why(recs):
    for r in recs:
        if r.get("late"):
            return "started measuring after the busy interval began"
        if r.get("why"):
            return r["why"][:160]
    return "no result"


def _ratio_cell(peer, ours, res):
    """|peer| / |joules|, or what can be said when an error is below the setup's resolution."""
    if peer is None or ours is None:
        return "–"
    if peer < res and ours < res:
        return "both within resolution"
    if ours < res:
        return "> " + fmt_ratio(peer / res)
    return fmt_ratio(ratio(peer, ours))


def tables(res: dict) -> list[dict]:
    out = []
    for kind, by_tool in res["kinds"].items():
        j = by_tool["joules"]["abs_error_percent"]["median"]
        resolution = max((m.get("resolution_percent") or 0) for m in by_tool.values())
        rows = []
        for tool in TOOLS:
            m = by_tool[tool]
            s, a = m["error_percent"], m["abs_error_percent"]
            if s["n"] == 0:
                rows.append([tool, "cannot: " + _why(m["runs"]), "", "", ""])
                continue
            rows.append([tool, fmt_pct(s["median"], signed=True),
                         fmt_spread(s, lambda x: fmt_pct(x, signed=True)), str(s["n"]),
                         "1×" if tool == "joules" else _ratio_cell(a["median"], j, resolution)])
        label = {"counter": "GPUs with an energy counter (Hopper, counter updated every 100 ms)",
                 "polled": "GPUs without an energy counter (Pascal: power polling)",
                 "counter_zero_idle": "the counter GPUs again, but reading exactly 0 W when idle"
                 }[kind]
        out.append({"title": f"Total-energy error, {label}; 8 GPUs, "
                             f"{res['conditions']['busy_s']:.0f} s of work",
                    "columns": ["tool", "error (median)", "spread (min–max)", "runs",
                                "|peer| ÷ |joules|"],
                    "rows": rows,
                    "notes": [f"Resolution of this setup: ±{fmt_pct(resolution)} (idle energy "
                              "inside or outside a tool's window, and the counter's millijoule "
                              "floor); smaller errors are exact as far as it can tell."]})
    return out
