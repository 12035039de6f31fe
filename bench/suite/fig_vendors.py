"""joules on each vendor's GPUs: the per-step energy error and the sampler's CPU, NVIDIA beside
AMD (AMD SMI), Intel GPUs (Level Zero Sysman) and Intel Gaudi (HLML), each through its fake library
(tests/fake_nvml, tests/fake_amdsmi, tests/fake_level_zero, tests/fake_hlml), 8 devices, 20 µs a
library call.

Per-step error: tests/cli/wrap_accuracy.measure with `vendor` set (the Python child, steps of
100 ms ±40 %, power piecewise constant on 20 ms segments between 100 and 700 W, the energy
counter advancing continuously or every 100 ms), the same seed for every vendor, so every vendor
sees the same steps and the same power.  The vendors run one after another.

Sampler CPU: `joules run -q -- sleep D` (its default 100 ms interval) on 8 GPUs of each vendor,
the three side by side (CPU time is the figure, so they see the same machine at the same moment),
CPU time of joules' threads from 2 s after the workload started to 1 s before it ends
(bench/suite/common.Watched), divided by the GPUs."""
from __future__ import annotations

import json
import os
import signal
import time

from .common import FAKE_DIR, JOULES, ROOT, Watched, constant_scenario, rmtree
from .render import fmt_pct

import wrap_accuracy  # tests/cli/wrap_accuracy.py (common puts tests/cli on sys.path)

NAME = "vendors"
BUILD_TARGETS: tuple = ()  # none of the extra programs
# The other vendors' fakes, with the CMake targets that build them.
NEEDS = {FAKE_DIR.parent / "fake_amdsmi" / "amdsmi" / "libamd_smi.so": "fake_amdsmi_amdsmi",
         FAKE_DIR.parent / "fake_level_zero" / "full" / "libze_loader.so.1": "fake_level_zero_full",
         FAKE_DIR.parent / "fake_hlml" / "libhlml.so": "fake_hlml"}
GPUS, LATENCY_US = 8, 20
VENDORS = {"nvidia": "NVIDIA (NVML)", "amd": "AMD (AMD SMI)", "intel": "Intel (Level Zero)",
           "gaudi": "Intel Gaudi (HLML)"}


def _env(vendor: str, scenario_path, epoch_ns: int) -> dict:
    env = dict(os.environ)
    for k in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
              "HIP_VISIBLE_DEVICES", "ZE_AFFINITY_MASK", "JOULES_RUN_ID", "SLURM_JOB_ID",
              "SLURM_STEP_ID", "JOULES_REGION"):
        env.pop(k, None)
    env.update(wrap_accuracy.vendor_env(vendor, FAKE_DIR, scenario_path, epoch_ns))
    # GPU only: the host's RAPL stays out of the figures.
    env["JOULES_POWERCAP_ROOT"] = str(ROOT / "tests" / "fixtures" / "powercap" / "absent")
    return env


def _step_accuracy(ctx) -> list[dict]:
    steps = 20 if ctx.quick else 100
    rows = []
    for update_ms in (0, 100):
        for vendor in VENDORS:
            ctx.log(f"vendors: per-step error, {vendor}, counter every {update_ms} ms, "
                    f"100 ms steps x {steps}")
            try:
                m = wrap_accuracy.measure(JOULES, FAKE_DIR, "python", gpus=GPUS,
                                          update_ms=update_ms, step_ms=100, steps=steps,
                                          seed=11 + update_ms, latency_us=LATENCY_US,
                                          vendor=vendor)
                cell = {"median": m["median"], "p95": m["p95"], "steps": len(m["errors"]),
                        "errors": m["errors"]}
            except Exception as e:  # reported in the table, the figure goes on
                cell = {"error": f"{type(e).__name__}: {e}"[:400]}
            rows.append({"vendor": vendor, "counter_update_ms": update_ms, **cell})
    return rows


def _sampler_cpu(ctx) -> dict:
    seconds = 8 if ctx.quick else 30
    work = ctx.tmpdir("vendors")
    watched = {}
    for vendor in VENDORS:
        ctx.log(f"vendors: sampler CPU, {vendor}, {GPUS} GPUs, sleep {seconds}")
        path = work / f"{vendor}.json"
        path.write_text(json.dumps(constant_scenario(GPUS, latency_us=LATENCY_US)))
        env = _env(vendor, path, time.monotonic_ns() - 10 * 10**9)
        watched[vendor] = Watched(vendor, [str(JOULES), "run", "-q", "--", "sleep", str(seconds)],
                                  env, workload="sleep", period=0.5)
    results = {}
    for vendor, w in watched.items():
        w.wait(timeout=seconds + 60)
        if w.status != 0 or w.t_workload is None:
            results[vendor] = {"error": f"exit {w.status}: " + w.stderr_text.strip()[-300:]}
            continue
        cpu = w.cpu_per_wall_s(w.t_workload + 2.0, w.t_workload + seconds - 1.0)
        results[vendor] = {"cpu_per_wall_s": cpu,
                           "cpu_per_gpu": None if cpu is None else cpu / GPUS,
                           "peak_rss_kb": w.peak_hwm_kb()}
    for w in watched.values():
        if w.status is None:
            w.kill(signal.SIGKILL)
    rmtree(work)
    return {"seconds": seconds, "tools": results}


def run(ctx) -> dict:
    return {"step_accuracy": _step_accuracy(ctx), "sampler": _sampler_cpu(ctx),
            "conditions": {"gpus": GPUS, "latency_us": LATENCY_US, "jitter": 0.4,
                           "power": "20 ms segments, 100-700 W (per-step); 300 W (sampler)"}}


def tables(res: dict) -> list[dict]:
    rows = []
    for r in res["step_accuracy"]:
        counter = ("continuous" if r["counter_update_ms"] == 0
                   else f"every {r['counter_update_ms']} ms")
        if "error" in r:
            rows.append([VENDORS[r["vendor"]], counter, "failed: " + r["error"][:120], "", ""])
        else:
            rows.append([VENDORS[r["vendor"]], counter, str(r["steps"]),
                         fmt_pct(r["median"] * 100), fmt_pct(r["p95"] * 100)])
    accuracy = {"title": f"Per-step energy error by vendor ({GPUS} GPUs, {LATENCY_US} µs a call, "
                         "Python child, 100 ms steps)",
                "columns": ["vendor", "counter", "steps", "median", "p95"], "rows": rows}
    cpu_rows = []
    for vendor, r in res["sampler"]["tools"].items():
        if "error" in r:
            cpu_rows.append([VENDORS[vendor], "failed: " + r["error"][:120], "", ""])
            continue
        cpu_rows.append([VENDORS[vendor], fmt_pct(r["cpu_per_wall_s"] * 100),
                         fmt_pct(r["cpu_per_gpu"] * 100),
                         f"{r['peak_rss_kb'] / 1024:.1f} MB"])
    cpu = {"title": f"Sampler CPU by vendor (`joules run -- sleep {res['sampler']['seconds']}`, "
                    f"{GPUS} GPUs, side by side)",
           "columns": ["vendor", "CPU (% of a core)", "per GPU", "peak RSS"], "rows": cpu_rows}
    return [accuracy, cpu]
