"""Start-up overhead: wall time of `TOOL run -- true` minus that of plain `true`, 8 fake GPUs with
20 µs per NVML call.  Runs alternate between tools within each round (the order rotates every
round), so drift in the machine's load spreads over all of them; medians are quoted.
Scaling: joules and matcha with 1, 8 and 64 GPUs.  The CPU a one-second run costs: `TOOL run --
sleep 1`, joules and matcha alternating, with energy counters as cheap as any call and with
counters that take 3.9 ms of CPU a read, as an H100's do (docs/nvml-notes.md §2.4); the fake
NVML's call log counts each tool's counter reads.  Most of joules' cost there is its start burst,
the dense reads that learn when each counter updates (src/sampler/sampler_bursts.cpp).
The edges of such a short run: each GPU's energy in `joules run -- sleep 3` on 8 costly counters
at a constant 300 W, against 300 W times the run's duration; a counter value placed one update
off is 30 J (an update every 100 ms)."""
from __future__ import annotations

import json

from . import tools
from .common import (TOOLS, constant_scenario, fake_env, median, ratio, rmtree, run_timed,
                     summary)
from .render import fmt_ms, fmt_ratio, fmt_spread

NAME = "startup"
COSTLY_COUNTER_US = 3900


def _round(ctx, order, env):
    out = {}
    for tool in order:
        if tool == "true":
            wall, status, ru = run_timed(["true"], env)
        else:
            d = ctx.tmpdir(f"startup-{tool}")
            argv, cwd = tools.run_argv(tool, ["true"], d)
            wall, status, ru = run_timed(argv, env, cwd=cwd)
            rmtree(d)
        out[tool] = (wall, status, ru.ru_utime + ru.ru_stime)
    return out


def run(ctx) -> dict:
    reps = {"joules": 5 if ctx.quick else 20, "peer": 2 if ctx.quick else 5}
    env = fake_env(constant_scenario(8))
    walls = {t: [] for t in ["true", *TOOLS]}
    cpus = {t: [] for t in TOOLS}
    failures = {}
    rounds = max(reps["joules"], reps["peer"])
    for r in range(rounds):
        members = ["true", "joules"] + ([t for t in TOOLS[1:]] if r < reps["peer"] else [])
        k = r % len(members)
        order = members[k:] + members[:k]
        ctx.log(f"startup round {r + 1}/{rounds}: {' '.join(order)}")
        res = _round(ctx, order, env)
        for tool, (wall, status, cpu) in res.items():
            if status != 0:
                failures[tool] = f"exit status {status}"
                continue
            walls[tool].append(wall)
            if tool in cpus:
                cpus[tool].append(cpu)
    base = median(walls["true"])
    overhead = {t: summary([w - base for w in walls[t]]) for t in TOOLS}
    cpu = {t: summary(cpus[t]) for t in TOOLS}

    # Scaling with the number of GPUs: joules and matcha only (the other peers' start-up is
    # dominated by importing their Python packages).
    scaling = {}
    sreps = {"joules": 3 if ctx.quick else 10, "matcha": 1 if ctx.quick else 3}
    for gpus in (1, 8, 64):
        if gpus == 8:
            scaling["8"] = {t: overhead[t]["median"] for t in ("joules", "matcha")}
            continue
        genv = fake_env(constant_scenario(gpus))
        w = {"true": [], "joules": [], "matcha": []}
        for r in range(max(sreps.values())):
            members = ["true", "joules"] + (["matcha"] if r < sreps["matcha"] else [])
            res = _round(ctx, members[r % len(members):] + members[:r % len(members)], genv)
            for tool, (wall, status, _) in res.items():
                if status == 0:
                    w[tool].append(wall)
        b = median(w["true"])
        scaling[str(gpus)] = {t: (median([x - b for x in w[t]]) if w[t] else None)
                              for t in ("joules", "matcha")}
        ctx.log(f"startup with {gpus} GPUs: {scaling[str(gpus)]}")
    return {"true_wall_s": summary(walls["true"]), "overhead_s": overhead, "cpu_s": cpu,
            "failures": failures, "scaling_gpus": scaling,
            "short_run": _short_runs(ctx, 3 if ctx.quick else 7),
            "short_run_edges": _short_run_edges(ctx, 3 if ctx.quick else 12),
            "conditions": {"gpus": 8, "latency_us": 20, "command": "TOOL ... -- true",
                           "repetitions": reps}}


def _short_runs(ctx, reps: int) -> dict:
    """{counters: {tool: {"cpu_s": summary, "energy_reads": summary}}} of `TOOL run -- sleep 1`."""
    out = {}
    for counters, cost in (("cheap", 0), ("costly", COSTLY_COUNTER_US)):
        cpus = {t: [] for t in ("joules", "matcha")}
        reads = {t: [] for t in ("joules", "matcha")}
        for r in range(reps):
            for tool in (("joules", "matcha") if r % 2 == 0 else ("matcha", "joules")):
                d = ctx.tmpdir(f"short-{tool}")
                log = d / "calls.jsonl"
                env = fake_env(constant_scenario(8, counter_cpu_us=cost),
                               extra={"FAKE_NVML_CALL_LOG": str(log)})
                argv, cwd = tools.run_argv(tool, ["sleep", "1"], d)
                _, status, ru = run_timed(argv, env, cwd=cwd)
                if status == 0:
                    cpus[tool].append(ru.ru_utime + ru.ru_stime)
                    lines = log.read_text().splitlines() if log.exists() else []
                    reads[tool].append(sum(json.loads(x)["energy_reads"] for x in lines))
                rmtree(d)
        out[counters] = {t: {"cpu_s": summary(cpus[t]), "energy_reads": summary(reads[t])}
                         for t in cpus}
        ctx.log(f"short runs, {counters} counters: "
                + ", ".join(f"{t} {out[counters][t]['cpu_s']['median']}" for t in cpus))
    return out


def _short_run_edges(ctx, reps: int) -> dict:
    """Each GPU's error (J) in `joules run -- sleep 3` on 8 costly counters at 300 W."""
    errors = []
    env = fake_env(constant_scenario(8, watts=300.0, counter_cpu_us=COSTLY_COUNTER_US))
    for _ in range(reps):
        d = ctx.tmpdir("short-edges")
        argv, cwd = tools.run_argv("joules", ["sleep", "3"], d)
        _, status, _ = run_timed(argv, env, cwd=cwd)
        if status == 0:
            end = [json.loads(x) for x in (d / "joules.jsonl").read_text().splitlines()]
            end = [r for r in end if r["type"] == "session_end"][-1]
            errors += [x["energy_j"] - 300.0 * end["duration_s"] for x in end["devices"]]
        rmtree(d)
    worst = max((abs(e) for e in errors), default=None)
    ctx.log(f"short-run edges: {len(errors)} GPUs, worst {worst}")
    return {"errors_j": errors, "runs": reps}


def tables(res: dict) -> list[dict]:
    o, c = res["overhead_s"], res["cpu_s"]
    j = o["joules"]["median"]
    rows = []
    for t in TOOLS:
        s = o[t]
        if s["n"] == 0:
            rows.append([t, "cannot: " + res["failures"].get(t, "no run"), "", "", "", ""])
            continue
        rows.append([t, fmt_ms(s["median"]), fmt_spread(s, fmt_ms), str(s["n"]),
                     fmt_ms(c[t]["median"]),
                     "1×" if t == "joules" else fmt_ratio(ratio(s["median"], j))])
    sc = res["scaling_gpus"]
    srows = [[t] + [fmt_ms(sc[g][t]) for g in ("1", "8", "64")] for t in ("joules", "matcha")]
    return [
        {"title": "Start-up overhead of `TOOL -- true` (8 GPUs, 20 µs per NVML call)",
         "columns": ["tool", "overhead (median)", "spread (min–max)", "runs", "CPU time",
                     "peer ÷ joules"],
         "rows": rows},
        {"title": "Start-up overhead against the number of GPUs (median)",
         "columns": ["tool", "1 GPU", "8 GPUs", "64 GPUs"], "rows": srows},
    ] + _short_run_tables(res.get("short_run")) + _edge_tables(res.get("short_run_edges"))


def _short_run_tables(short: dict | None) -> list[dict]:
    if not short:
        return []
    rows = []
    for counters, what in (("cheap", "as cheap as any call"), ("costly", "3.9 ms of CPU a read")):
        j = short[counters]["joules"]["cpu_s"]["median"]
        for t in ("joules", "matcha"):
            c, n = short[counters][t]["cpu_s"], short[counters][t]["energy_reads"]
            rows.append([t, what, fmt_ms(c["median"]), fmt_spread(c, fmt_ms), str(c["n"]),
                         "–" if n["median"] is None else f"{n['median']:,.0f}",
                         "1×" if t == "joules" else fmt_ratio(ratio(c["median"], j))])
    return [{"title": "CPU of `TOOL run -- sleep 1` (8 GPUs, 20 µs per NVML call)",
             "columns": ["tool", "energy counter", "CPU time (median)", "spread (min–max)",
                         "runs", "counter reads", "peer ÷ joules"],
             "rows": rows}]


def _edge_tables(edges: dict | None) -> list[dict]:
    if not edges or not edges["errors_j"]:
        return []
    errs = [abs(e) for e in edges["errors_j"]]
    off = [str(sum(e > limit for e in errs)) for limit in (2.0, 6.0, 10.0)]
    return [{"title": "Each GPU's energy in `joules run -- sleep 3` against 300 W × its duration "
                      "(8 GPUs whose counters take 3.9 ms a read)",
             "columns": ["GPUs measured", "off by > 2 J", "> 6 J", "> 10 J", "median error (size)",
                         "largest error (size)"],
             "rows": [[str(len(errs)), *off, f"{median(errs):.2f} J", f"{max(errs):.1f} J"]]}]
