"""joules tune on the fake NVML's workload curves: steps spent profiling, energy saved per step
against the limit in force before (700 W, the default), and the gap of the choice to each goal's
true optimum (tests/cli/tune_curves.py: every point of each curve is known).  One GPU, the toy
trainer's steps stretched by the limit in force (examples/toy_trainer.c --slowdown-file),
default settle and profile steps.  No peer: Zeus tunes only inside a Python training loop
(GlobalPowerLimitOptimizer), and no tool tunes an unmodified command."""
from __future__ import annotations

import json
import statistics
import subprocess

from .common import BUILD_NAME, JOULES, TOY_TRAINER, fake_env, rmtree, summary

import tune_curves as curves  # noqa: E402  tests/cli/tune_curves.py (common.py puts it on the path)

NAME = "tune"
# No peer runs here, and no build target beyond joules, the fake and the trainer: bench/run
# then installs no peers and builds nothing more.
USES_PEERS = False
BUILD_TARGETS: tuple = ()
GOALS = ["energy", "edp", "time-within", "cost"]
STEP_MS = 100.0
STEPS = 160  # the whole search (about 120 steps at the default 2 + 8 per limit) and more


def one(ctx, tmp, curve: str, goal: str, rep: int) -> dict:
    d = tmp / f"{curve}-{goal}-{rep}"
    d.mkdir()
    state = d / "fake-state"
    env = fake_env({"devices": [curves.device(curve)]},
                   extra={"FAKE_NVML_STATE_FILE": str(state), "JOULES_STATE_DIR": str(d / "journal")})
    out = d / "run.jsonl"
    r = subprocess.run([str(JOULES), "tune", "-q", "--no-inline", "--goal", goal, "--output",
                        str(out), "--", str(TOY_TRAINER), "--steps", str(STEPS), "--step-ms",
                        str(STEP_MS), "--jitter", "0", "--setup-ms", "50", "--slowdown-file",
                        str(state)],
                       env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                       timeout=300)
    if r.returncode != 0 or not out.exists():
        return {"error": f"exit {r.returncode}: {r.stderr.strip()[-300:]}"}
    t = json.loads(out.read_text().splitlines()[-1])["tune"]
    if t["status"] != "tuned":
        return {"error": f"status {t['status']}: {t['reason']}"}
    chosen = t["chosen_limit_w"]
    best = curves.optimum(curve, goal)
    e_base, _ = curves.point(curve, 700.0, 1.0)
    e_best, _ = curves.point(curve, best, 1.0)
    e_chosen, _ = curves.point(curve, chosen, 1.0)
    return {"chosen_w": chosen, "optimum_w": best,
            "profiled_limits": t["profiled_limits"], "profiling_steps": t["profiling_steps"],
            # measured: the chosen limit's energy per step against the baseline's
            "measured_saving": -t["energy_per_step_change"],
            "measured_time_change": t["time_per_step_change"],
            # from the curve: what the choice saves, what the optimum would, and the gap
            "curve_saving": 1.0 - e_chosen / e_base, "optimum_saving": 1.0 - e_best / e_base,
            "gap": curves.gap(curve, goal, chosen)}


def run(ctx) -> dict:
    reps = 1 if ctx.quick else 2
    tmp = ctx.tmpdir("tune")
    cells = {}
    for curve in sorted(curves.CURVES):
        for goal in GOALS:
            ctx.log(f"tune: {curve}, goal {goal}, {reps} run(s)")
            runs = [one(ctx, tmp, curve, goal, r) for r in range(reps)]
            cells[f"{curve}/{goal}"] = runs
    rmtree(tmp)
    ok = [x for runs in cells.values() for x in runs if "error" not in x]
    return {"cells": cells,
            "steps_profiling": summary([x["profiling_steps"] for x in ok]),
            "limits_profiled": summary([x["profiled_limits"] for x in ok]),
            "gap": summary([x["gap"] for x in ok]),
            "within_one_step": sum(abs(x["chosen_w"] - x["optimum_w"]) <= 25 for x in ok),
            "runs": len(ok),
            "errors": [x["error"] for runs in cells.values() for x in runs if "error" in x],
            "conditions": {"build": BUILD_NAME, "repetitions": reps,
                           "step_ms": STEP_MS, "steps": STEPS,
                           "grid_w": "700 to 200 in 25 W steps", "settle_steps": 2,
                           "profile_steps": 8, "curves": {k: list(v) for k, v in
                                                          curves.CURVES.items()}}}


def _pct(x):
    return "–" if x is None else f"{x * 100:.1f} %"


def tables(res: dict) -> list[dict]:
    rows = []
    for key, runs in res["cells"].items():
        ok = [x for x in runs if "error" not in x]
        if not ok:
            rows.append([key, "failed: " + runs[0]["error"], "", "", "", "", ""])
            continue
        med = lambda k: statistics.median(x[k] for x in ok)  # noqa: E731
        chosen = ", ".join(str(int(x["chosen_w"])) for x in ok)
        rows.append([key.replace("/", ", "), f"{int(ok[0]['optimum_w'])} W", f"{chosen} W",
                     f"{med('profiled_limits'):.0f} limits, {med('profiling_steps'):.0f} steps",
                     f"{_pct(med('measured_saving'))} ({_pct(med('measured_time_change'))} time)",
                     f"{_pct(med('curve_saving'))} of {_pct(ok[0]['optimum_saving'])}",
                     _pct(max(x["gap"] for x in ok))])
    s, lim, gap = res["steps_profiling"], res["limits_profiled"], res["gap"]
    notes = [
        f"Build: `{res['conditions']['build']}`; {res['conditions']['repetitions']} runs per "
        f"cell; steps of {res['conditions']['step_ms']:.0f} ms at full power. Over the "
        f"{res['runs']} runs: {s['median']:.0f} steps of profiling (median; "
        f"{s['min']:.0f} – {s['max']:.0f}) for {lim['median']:.0f} limits; the choice within "
        f"one 25 W step of the optimum in {res['within_one_step']} of {res['runs']}; the largest "
        f"gap to the optimum {_pct(gap['max'])} (median {_pct(gap['median'])}).",
    ]
    if res["errors"]:
        notes.append("Failed runs: " + "; ".join(res["errors"]))
    return [{"title": "joules tune on the fake NVML's workload curves (one GPU, baseline 700 W)",
             "columns": ["curve, goal", "optimum", "chosen (each run)", "profiling (median)",
                         "energy per step, measured", "saving on the curve (of the optimum's)",
                         "largest gap"],
             "rows": rows, "notes": notes}]
