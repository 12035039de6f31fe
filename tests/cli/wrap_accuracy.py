"""Per-step energy accuracy of `joules wrap` against the fake NVML's exact truth.

One function shared by the black-box tests (tests/cli/test_wrap_nvml.py) and the benchmark suite
(bench/run): it runs a trainer-like child under `joules wrap` on GPUs whose power is piecewise
constant on 20 ms segments drawn between 100 and 700 W, and compares the energy joules gives
each step with the exact integral of the scenario's power between the instants the child wrote
the step's line and the previous one (the child records them: --stamps).
"""
import json
import os
import pathlib
import random
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "fake_nvml"))
import scenario as fake  # noqa: E402  (tests/fake_nvml/scenario.py)

PY_TRAINER = HERE / "children" / "py_trainer.py"


def random_power(seed, seconds, dt_s=0.02, low=100.0, high=700.0):
    rng = random.Random(seed)
    n = int(seconds / dt_s) + 1
    return {"type": "segments", "start_s": 0.0, "dt_s": dt_s,
            "watts": [round(rng.uniform(low, high), 3) for _ in range(n)]}


def scenario(gpus, update_ms, seconds, seed=7, latency_us=0):
    return {"latency_us": latency_us,
            "devices": [{"power": random_power(seed * 1000 + i, seconds),
                         "energy_counter": {"update_ms": update_ms}} for i in range(gpus)]}


def percentile(values, p):
    s = sorted(values)
    if not s:
        return float("nan")
    k = (len(s) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def measure(joules_bin, fake_nvml_dir, child, *, gpus=2, update_ms=0, step_ms=100.0, steps=30,
            seed=1, latency_us=0, epoch_before_s=10.0, extra_args=(), trainer=None):
    """Runs one wrapped training run; returns a dict with the per-step relative errors (total of
    all GPUs per step), the per-GPU ones, and the run's record.

    child: "python" (tests/cli/children/py_trainer.py) or "c" (the toy trainer, C stdio)."""
    seconds = epoch_before_s + 1.0 + steps * step_ms * 1.5 / 1000.0 + 5.0
    sc = scenario(gpus, update_ms, seconds, seed=seed, latency_us=latency_us)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        stamps_path, out = tmp / "stamps", tmp / "run.jsonl"
        common = ["--steps", str(steps), "--step-ms", str(step_ms), "--jitter", "0.4",
                  "--seed", str(seed), "--setup-ms", "300", "--stamps", str(stamps_path)]
        if child == "python":
            cmd = [sys.executable, str(PY_TRAINER), *common]
        else:
            cmd = [str(trainer), *common]
        epoch_ns = time.monotonic_ns() - int(epoch_before_s * 1e9)
        env = dict(os.environ)
        for k in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "JOULES_RUN_ID"):
            env.pop(k, None)
        # Through a file: a long run's scenario is over the kernel's 128 KiB limit for one
        # environment string (execve fails with E2BIG).
        scenario_path = tmp / "scenario.json"
        scenario_path.write_text(json.dumps(sc))
        env.update({"JOULES_NVML_LIBRARY": str(pathlib.Path(fake_nvml_dir) / "full" / "libnvidia-ml.so.1"),
                    "FAKE_NVML_SCENARIO": str(scenario_path), "FAKE_NVML_EPOCH_NS": str(epoch_ns)})
        r = subprocess.run([str(joules_bin), "wrap", "-q", "--no-inline", "--output", str(out),
                            *extra_args, "--", *cmd], env=env, capture_output=True, timeout=600)
        if r.returncode != 0:
            raise RuntimeError(f"joules wrap failed ({r.returncode}): {r.stderr.decode()}")
        stamps = [int(x) / 1e9 for x in stamps_path.read_text().split()]
        records = [json.loads(x) for x in out.read_text().splitlines()]
    devices = fake.load(sc).devices
    epoch_s = epoch_ns / 1e9

    def truth(d, a, b):
        return devices[d].energy_j(b - epoch_s) - devices[d].energy_j(a - epoch_s)

    errors, gpu_errors = [], []
    for rec in records:
        if rec["type"] != "step" or rec["step_gap"] != 1:
            continue
        n = rec["step"]  # its window runs from step n-1's line to step n's
        a, b = stamps[n - 2], stamps[n - 1]
        exact = sum(truth(d, a, b) for d in range(gpus))
        errors.append(abs(rec["energy_j"] - exact) / exact)
        for d, g in enumerate(rec["gpus"]):
            t = truth(d, a, b)
            gpu_errors.append(abs(g["energy_j"] - t) / t)
    end = records[-1]
    return {"errors": errors, "gpu_errors": gpu_errors, "session_end": end, "records": records,
            "stamps": stamps,
            "median": statistics.median(errors) if errors else float("nan"),
            "p95": percentile(errors, 95)}
