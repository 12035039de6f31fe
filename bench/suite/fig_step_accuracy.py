"""Per-step energy error (median and p95 over the steps of a run) against the exact truth, for a
Python child and a C child (default stdio buffering), the counter advancing continuously or every
100 ms (as on H100), steps of 100 ms and 1 s (±40 %).

joules: tests/cli/wrap_accuracy.measure (`joules wrap` on a pseudo-terminal).  matcha: `matcha wrap
--output FILE` on the same scenario, the same child and the same seed (so the same step lengths),
its step records compared with the same truth: the exact energy between the instants the child
wrote step n-1's line and step n's.  joules and matcha of one configuration run side by side.
8 fake GPUs, 20 µs per NVML call, power piecewise constant on 20 ms segments, 100-700 W."""
from __future__ import annotations

import json
import pathlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from .common import FAKE_DIR, JOULES, TOY_TRAINER, VENV, fake, fake_env, percentile, ratio
from .render import fmt_pct, fmt_ratio

import wrap_accuracy  # tests/cli/wrap_accuracy.py (common puts tests/cli on sys.path)

NAME = "step_accuracy"
GPUS, LATENCY_US = 8, 20


def matcha_measure(child, *, gpus, update_ms, step_ms, steps, seed, latency_us,
                   epoch_before_s=10.0):
    """matcha wrap's per-step errors, computed exactly as wrap_accuracy.measure does for joules."""
    seconds = epoch_before_s + 1.0 + steps * step_ms * 1.5 / 1000.0 + 5.0
    sc = wrap_accuracy.scenario(gpus, update_ms, seconds, seed=seed, latency_us=latency_us)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        stamps_path, out = tmp / "stamps", tmp / "run.jsonl"
        common = ["--steps", str(steps), "--step-ms", str(step_ms), "--jitter", "0.4",
                  "--seed", str(seed), "--setup-ms", "300", "--stamps", str(stamps_path)]
        cmd = ([sys.executable, str(wrap_accuracy.PY_TRAINER), *common] if child == "python"
               else [str(TOY_TRAINER), *common])
        epoch_ns = time.monotonic_ns() - int(epoch_before_s * 1e9)
        scenario_path = tmp / "scenario.json"  # too long for one environment string
        scenario_path.write_text(json.dumps(sc))
        env = fake_env(str(scenario_path), epoch_ns=epoch_ns)
        r = subprocess.run([str(VENV / "bin" / "matcha"), "wrap", "--output", str(out), "--", *cmd],
                           env=env, capture_output=True, timeout=600)
        if r.returncode != 0:
            raise RuntimeError(f"matcha wrap failed ({r.returncode}): {r.stderr.decode()[-500:]}")
        stamps = [int(x) / 1e9 for x in stamps_path.read_text().split()]
        records = [json.loads(x) for x in out.read_text().splitlines() if x.strip()]
    devices = fake.load(sc).devices
    epoch_s = epoch_ns / 1e9
    errors = []
    for rec in records:
        if rec["type"] != "step" or rec["step_gap"] != 1:
            continue
        n = rec["step"]
        a, b = stamps[n - 2], stamps[n - 1]
        exact = sum(devices[d].energy_j(b - epoch_s) - devices[d].energy_j(a - epoch_s)
                    for d in range(gpus))
        errors.append(abs(rec["energy_j"] - exact) / exact)
    return {"errors": errors, "median": statistics.median(errors) if errors else None,
            "p95": percentile(errors, 95) if errors else None, "steps": steps}


def _configs(quick):
    steps = {100: 20 if quick else 100, 1000: 6 if quick else 16}
    for child in ("python", "c"):
        for update_ms in (0, 100):
            for step_ms in (100, 1000):
                yield child, update_ms, step_ms, steps[step_ms]


def run(ctx) -> dict:
    rows = []
    for i, (child, update_ms, step_ms, steps) in enumerate(_configs(ctx.quick)):
        ctx.log(f"step accuracy: {child} child, counter every {update_ms} ms, {step_ms} ms steps "
                f"x {steps} (joules and matcha side by side)")
        res = {}

        def do_joules():
            try:
                m = wrap_accuracy.measure(JOULES, FAKE_DIR, child, gpus=GPUS, update_ms=update_ms,
                                          step_ms=step_ms, steps=steps, seed=3 + i,
                                          latency_us=LATENCY_US, trainer=TOY_TRAINER)
                res["joules"] = {"median": m["median"], "p95": m["p95"],
                                 "errors": m["errors"], "steps": steps}
            except Exception as e:  # reported in the table, the suite goes on
                res["joules"] = {"error": f"{type(e).__name__}: {e}"[:400]}

        def do_matcha():
            try:
                res["matcha"] = matcha_measure(child, gpus=GPUS, update_ms=update_ms,
                                               step_ms=step_ms, steps=steps, seed=3 + i,
                                               latency_us=LATENCY_US)
            except Exception as e:
                res["matcha"] = {"error": f"{type(e).__name__}: {e}"[:400]}

        threads = [threading.Thread(target=do_joules), threading.Thread(target=do_matcha)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        rows.append({"child": child, "counter_update_ms": update_ms, "step_ms": step_ms,
                     "steps": steps, **res})
    return {"configs": rows,
            "cannot": {
                "zeus": "needs code changes: begin_window/end_window calls in the training loop "
                        "(no mode that reads a trainer's output)",
                "codecarbon": "needs code changes: start_task/stop_task in the training loop",
                "carbontracker": "needs code changes: epoch_start/epoch_end per epoch; its 1 s "
                                 "sampler cannot resolve 100 ms steps",
            },
            "conditions": {"gpus": GPUS, "latency_us": LATENCY_US, "jitter": 0.4,
                           "power": "20 ms segments, 100-700 W"}}


def tables(res: dict) -> list[dict]:
    rows = []
    for c in res["configs"]:
        j, m = c.get("joules", {}), c.get("matcha", {})
        label = [("Python" if c["child"] == "python" else "C (stdio)"),
                 "continuous" if c["counter_update_ms"] == 0 else f"every {c['counter_update_ms']} ms",
                 f"{c['step_ms']} ms × {c['steps']}"]

        def cells(x):
            if "error" in x:
                return ["failed: " + x["error"][:120], ""]
            if x.get("median") is None:
                return ["cannot: no step records", ""]
            return [fmt_pct(x["median"] * 100), fmt_pct(x["p95"] * 100)]

        jc, mc = cells(j), cells(m)
        rj = ratio(m.get("median"), j.get("median")) if "error" not in m else None
        rows.append(label + jc + mc + [fmt_ratio(rj)])
    notes = ["Zeus, CodeCarbon, carbontracker: cannot — " + "; ".join(
        f"{k}: {v}" for k, v in res["cannot"].items()) + "."]
    return [{"title": "Per-step energy error against exact truth (8 GPUs, 20 µs per NVML call)",
             "columns": ["child", "counter", "steps", "joules median", "joules p95",
                         "matcha median", "matcha p95", "matcha ÷ joules (median)"],
             "rows": rows, "notes": notes}]

