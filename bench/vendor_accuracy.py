#!/usr/bin/env python3
"""Energy accuracy of joules on each vendor's fake GPUs, repeated, optionally under CPU load.

    bench/vendor_accuracy.py total [--runs N] [--load K] [--vendors amd,intel,nvidia]
    bench/vendor_accuracy.py steps [--runs N] [--load K] [--vendors amd,intel,nvidia]

`total`: the cases of tests/cli/test_run_{nvml,amd,intel}.py that hold a 10 s run to 0.1 %:
`joules run -- sleep 10` on two GPUs whose energy counter advances every 100 ms (phase 37 ms),
power piecewise constant on 20 ms segments between 100 and 700 W on one and a 150/650 W square
wave of 0.3 s on the other (Intel: a ramp between 150 and 550 W on both, as Level Zero has no
power reading to place the energy at the edges); each run's signed error per GPU against the
exact integral, and how many runs kept every GPU within 0.1 %.

`steps`: per-step error of `joules wrap` (tests/cli/wrap_accuracy.py: a Python child printing
40 steps of 100 ms +-40 %, two GPUs), the counter advancing every 100 ms; median and p95 over
the steps of all runs.

--load K starts K busy loops at nice 10 for the whole measurement, as other work on the machine
would.  Uses the dev build (JOULES_TEST_BUILD_DIR to choose another, JOULES_BIN for another
joules binary).  Prints one JSON object.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "cli"))
import wrap_accuracy  # noqa: E402  tests/cli/wrap_accuracy.py

BUILD = pathlib.Path(os.environ.get("JOULES_TEST_BUILD_DIR", ROOT / "build" / "dev"))
JOULES = pathlib.Path(os.environ.get("JOULES_BIN", BUILD / "src" / "joules"))
FAKE_NVML_DIR = BUILD / "tests" / "fake_nvml"
BOUND = 1e-3


def percentile(values, p):
    return wrap_accuracy.percentile(values, p)


def segments(seed, seconds=40.0, dt_s=0.02):
    rng = random.Random(seed)
    return {"type": "segments", "start_s": 0.0, "dt_s": dt_s,
            "watts": [round(rng.uniform(100, 700), 3) for _ in range(int(seconds / dt_s))]}


def total_once(vendor, seed, seconds=10, joules=None):
    counter = {"update_ms": 100, "phase_ms": 37}
    extra = {"latency_us": 20, "energy_counter": counter}
    if vendor == "nvidia":
        extra["architecture"] = "hopper"
    square = {"type": "square", "low_w": 150, "high_w": 650, "period_s": 0.3}
    sc = {"devices": [{"power": segments(seed), **extra}, {"power": square, **extra}]}
    if vendor == "intel":
        # No power readings in Level Zero: the counter is all there is, and the energy between an
        # edge and the counter's next update is interpolated, exact for power that changes slowly
        # (tests/cli/test_run_intel.py holds a ramp to 0.1 %, not power that jumps every 20 ms).
        ramp = {"type": "linear", "points": [[0, 150], [14, 550], [20, 250]]}
        sc = {"devices": [{"power": ramp, **extra}, {"power": ramp, **extra}]}
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "scenario.json"
        path.write_text(json.dumps(sc))
        epoch_ns = time.monotonic_ns() - 10 * 10**9
        env = dict(os.environ)
        for k in ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
                  "ZE_AFFINITY_MASK", "JOULES_RUN_ID"):
            env.pop(k, None)
        env["JOULES_POWERCAP_ROOT"] = str(ROOT / "tests" / "fixtures" / "powercap" / "absent")
        env.update(wrap_accuracy.vendor_env(vendor, FAKE_NVML_DIR, path, epoch_ns))
        r = subprocess.run([str(joules or JOULES), "run", "--json", "--", "sleep", str(seconds)],
                           env=env,
                           capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"joules run failed ({r.returncode}): {r.stderr[-800:]}")
    end = [json.loads(x) for x in r.stderr.splitlines() if x.startswith("{")][-1]
    epoch_s = epoch_ns / 1e9
    errors = []
    energy = wrap_accuracy.energy_functions(sc, vendor)
    for i, d in enumerate(end["devices"]):
        e = energy[i]
        truth = e(end["end_monotonic_s"] - epoch_s) - e(end["start_monotonic_s"] - epoch_s)
        errors.append((d["energy_j"] - truth) / truth)
    return errors


def busy_loops(k):
    code = "while True: pass"
    return [subprocess.Popen(["nice", "-n", "10", sys.executable, "-c", code],
                             start_new_session=True) for _ in range(k)]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=["total", "steps"])
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--load", type=int, default=0)
    p.add_argument("--vendors", default="amd,intel,nvidia")
    p.add_argument("--bins", help="joules binaries to compare, comma-separated: each run of each "
                   "vendor goes through every one in turn, under the same load")
    a = p.parse_args()
    bins = a.bins.split(",") if a.bins else [str(JOULES)]
    loops = busy_loops(a.load)
    out = {"what": a.what, "runs": a.runs, "load": a.load,
           "loadavg_start": os.getloadavg()[0], "vendors": {}}
    try:
        for vendor in a.vendors.split(","):
            if a.what == "total":
                runs = {b: [] for b in bins}
                for seed in range(1, a.runs + 1):
                    for b in bins:
                        runs[b].append(total_once(vendor, seed, joules=b))
                res = {}
                for b in bins:
                    flat = [abs(e) for r in runs[b] for e in r]
                    res[b] = {"passed": sum(all(abs(e) <= BOUND for e in r) for r in runs[b]),
                              "median_pct": 100 * statistics.median(flat),
                              "p95_pct": 100 * percentile(flat, 95),
                              "max_pct": 100 * max(flat),
                              "signed_pct": [[round(100 * e, 4) for e in r] for r in runs[b]]}
                out["vendors"][vendor] = res if a.bins else res[bins[0]]
            else:
                errors = []
                for seed in range(1, a.runs + 1):
                    r = wrap_accuracy.measure(JOULES, FAKE_NVML_DIR, "python", gpus=2,
                                              update_ms=100, step_ms=100, steps=40, seed=seed,
                                              latency_us=20, vendor=vendor)
                    errors += r["errors"]
                out["vendors"][vendor] = {"steps": len(errors),
                                          "median_pct": 100 * statistics.median(errors),
                                          "p95_pct": 100 * percentile(errors, 95)}
            print(f"{vendor}: {json.dumps(out['vendors'][vendor])[:300]}", file=sys.stderr,
                  flush=True)
    finally:
        for q in loops:
            os.killpg(q.pid, signal.SIGKILL)
            q.wait()
    out["loadavg_end"] = os.getloadavg()[0]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
