"""CPU cost of RAPL sampling: joules' CPU time per wall second during `joules run -- sleep S` with
and without RAPL domains, the configurations of scripts/rapl-overhead (a copy of the fixture
powercap tree tests/fixtures/powercap/intel-2s-dram: 2 packages + 2 DRAM domains, on disk; the
kernel's files read an MSR per read and cost more).  Steady state only (schedstat, from 2 s after
the workload started to 1 s before it ended); the three configurations run side by side."""
from __future__ import annotations

import shutil

from .common import JOULES, ROOT, Watched, constant_scenario, fake_env, rmtree, summary

NAME = "rapl"


def run(ctx) -> dict:
    seconds = 8 if ctx.quick else 15
    reps = 1 if ctx.quick else 2
    tmp = ctx.tmpdir("rapl")
    tree = tmp / "intel-2s-dram"
    shutil.copytree(ROOT / "tests" / "fixtures" / "powercap" / "intel-2s-dram", tree)
    sleep = ["--", "sleep", str(seconds)]
    configs = {
        "sim GPU only": ([str(JOULES), "run", "-q", "--backend", "sim", "--sim-gpus", "1", *sleep],
                         str(tmp / "none")),
        "sim GPU + RAPL": ([str(JOULES), "run", "-q", "--backend", "sim", "--sim-gpus", "1", *sleep],
                           str(tree)),
        "RAPL only": ([str(JOULES), "run", "-q", "--components", "cpu,dram", *sleep], str(tree)),
    }
    per = {k: [] for k in configs}
    errors = {}
    for r in range(reps):
        ctx.log(f"rapl: {seconds} s, run {r + 1}/{reps}, three configurations side by side")
        ws = {}
        for name, (argv, root) in configs.items():
            env = fake_env(constant_scenario(1), extra={"JOULES_POWERCAP_ROOT": root})
            ws[name] = Watched(name, argv, env, workload="sleep", period=0.5)
        for name, w in ws.items():
            w.wait(timeout=seconds + 60)
            t0 = w.t_workload or w.t_launch
            c = w.cpu_per_wall_s(t0 + 2.0, t0 + seconds - 1.0)
            if w.status != 0 or c is None:
                errors[name] = f"exit status {w.status}: {w.stderr_text.strip()[-200:]}"
                continue
            per[name].append(c * 1000.0)  # CPU ms per wall second
    rmtree(tmp)
    out = {k: summary(v) for k, v in per.items()}
    base, with_rapl = out["sim GPU only"]["median"], out["sim GPU + RAPL"]["median"]
    return {"cpu_ms_per_s": out, "errors": errors,
            "rapl_adds_ms_per_s": None if None in (base, with_rapl) else with_rapl - base,
            "cannot": "carbontracker, Zeus and CodeCarbon read only the host's "
                      "/sys/class/powercap (this machine has none) and cannot be pointed at a "
                      "fixture tree",
            "conditions": {"seconds": seconds, "repetitions": reps, "interval_ms": 100,
                           "tree": "tests/fixtures/powercap/intel-2s-dram (copied to disk)"}}


def tables(res: dict) -> list[dict]:
    rows = []
    for name, s in res["cpu_ms_per_s"].items():
        if s["n"] == 0:
            rows.append([name, "failed: " + res["errors"].get(name, "no run"), "", ""])
            continue
        rows.append([name, f"{s['median']:.3f} ms/s ({s['median'] / 10:.4f} %)",
                     f"{s['min']:.3f} – {s['max']:.3f}", str(s["n"])])
    add = res["rapl_adds_ms_per_s"]
    rows.append(["RAPL adds (GPU + RAPL − GPU only)",
                 "–" if add is None else f"{add:.3f} ms/s", "", ""])
    return [{"title": "CPU cost of RAPL sampling (joules, 100 ms interval)",
             "columns": ["configuration", "CPU per wall second (median)", "spread (ms/s)", "runs"],
             "rows": rows,
             "notes": [f"Peers: cannot — {res['cannot']}."]}]

