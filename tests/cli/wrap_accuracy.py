"""Per-step energy accuracy of `joules wrap` against the fakes' exact truth.

One function shared by the black-box tests (tests/cli/test_wrap_accuracy.py) and the benchmark
suite (bench/run): it runs a trainer-like child under `joules wrap` on GPUs whose power is
piecewise constant on 20 ms segments drawn between 100 and 700 W, and compares the energy joules
gives each step with the exact integral of the scenario's power between the instants the child
wrote the step's line and the previous one (the child records them: --stamps).  The GPUs are the
fake NVML's, the fake AMD SMI's or the fake Level Zero loader's (`vendor`).
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
sys.path.insert(0, str(HERE.parent / "fake_common"))
import power  # noqa: E402  (tests/fake_common/power.py)
import scenario as fake  # noqa: E402  (tests/fake_nvml/scenario.py)

VENDORS = ("nvidia", "amd", "intel", "gaudi")

PY_TRAINER = HERE / "children" / "py_trainer.py"


def random_power(seed, seconds, dt_s=0.02, low=100.0, high=700.0):
    rng = random.Random(seed)
    n = int(seconds / dt_s) + 1
    return {"type": "segments", "start_s": 0.0, "dt_s": dt_s,
            "watts": [round(rng.uniform(low, high), 3) for _ in range(n)]}


def scenario(gpus, update_ms, seconds, seed=7, latency_us=0, counter_cpu_us=0, counter_wait_us=0):
    """A scenario every fake reads: power and an energy counter updated every update_ms (whose
    reads take counter_cpu_us of CPU in the fake NVML, as an H100's take 3,900)."""
    def counter(i):
        if not counter_cpu_us:
            return {"update_ms": update_ms}
        # Costly counters, each updating at its own instant, as the GPUs of a node do.
        return {"update_ms": update_ms, "phase_ms": 7 + 23 * i, "read_cpu_us": counter_cpu_us,
                "read_wait_us": counter_wait_us}
    return {"latency_us": latency_us,
            "devices": [{"power": random_power(seed * 1000 + i, seconds),
                         "energy_counter": counter(i)} for i in range(gpus)]}


def vendor_env(vendor, fake_nvml_dir, scenario_path, epoch_ns):
    """The environment that points joules at one vendor's fake, and at no other GPU library."""
    build = pathlib.Path(fake_nvml_dir).parent
    none = str(HERE / "no-such-library.so")
    env = {"JOULES_NVML_LIBRARY": none, "JOULES_AMDSMI_LIBRARY": none,
           "JOULES_ROCM_SMI_LIBRARY": none, "JOULES_LEVEL_ZERO_LIBRARY": none,
           "JOULES_HLML_LIBRARY": none}
    if vendor == "nvidia":
        env.update({"JOULES_NVML_LIBRARY": str(pathlib.Path(fake_nvml_dir) / "full" / "libnvidia-ml.so.1"),
                    "FAKE_NVML_SCENARIO": str(scenario_path), "FAKE_NVML_EPOCH_NS": str(epoch_ns)})
    elif vendor == "amd":
        env.update({"JOULES_AMDSMI_LIBRARY": str(build / "fake_amdsmi" / "amdsmi" / "libamd_smi.so"),
                    "FAKE_AMDSMI_SCENARIO": str(scenario_path), "FAKE_AMDSMI_EPOCH_NS": str(epoch_ns)})
    elif vendor == "gaudi":
        env.update({"JOULES_HLML_LIBRARY": str(build / "fake_hlml" / "libhlml.so"),
                    "FAKE_HLML_SCENARIO": str(scenario_path), "FAKE_HLML_EPOCH_NS": str(epoch_ns)})
    else:
        env.update({"JOULES_LEVEL_ZERO_LIBRARY": str(build / "fake_level_zero" / "full" / "libze_loader.so.1"),
                    "FAKE_ZE_SCENARIO": str(scenario_path), "FAKE_ZE_EPOCH_NS": str(epoch_ns)})
    return env


def energy_functions(sc, vendor):
    """E(t) of each device of `sc`, as the vendor's fake computes it."""
    if vendor == "nvidia":
        return [d.energy_j for d in fake.load(sc).devices]
    return [power.PowerDevice(d, 10**9).energy_j for d in sc["devices"]]


def percentile(values, p):
    s = sorted(values)
    if not s:
        return float("nan")
    k = (len(s) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def measure(joules_bin, fake_nvml_dir, child, *, gpus=2, update_ms=0, step_ms=100.0, steps=30,
            seed=1, latency_us=0, epoch_before_s=10.0, extra_args=(), trainer=None,
            vendor="nvidia", counter_cpu_us=0, counter_wait_us=0):
    """Runs one wrapped training run; returns a dict with the per-step relative errors (total of
    all GPUs per step), the per-GPU ones, and the run's record.

    child: "python" (tests/cli/children/py_trainer.py) or "c" (the toy trainer, C stdio).
    fake_nvml_dir: the build folder of the fake NVML; the other fakes are its siblings."""
    seconds = epoch_before_s + 1.0 + steps * step_ms * 1.5 / 1000.0 + 5.0
    sc = scenario(gpus, update_ms, seconds, seed=seed, latency_us=latency_us,
                  counter_cpu_us=counter_cpu_us, counter_wait_us=counter_wait_us)
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
        for k in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "JOULES_RUN_ID",
                  "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ZE_AFFINITY_MASK"):
            env.pop(k, None)
        # Through a file: a long run's scenario is over the kernel's 128 KiB limit for one
        # environment string (execve fails with E2BIG).
        scenario_path = tmp / "scenario.json"
        scenario_path.write_text(json.dumps(sc))
        env.update(vendor_env(vendor, fake_nvml_dir, scenario_path, epoch_ns))
        r = subprocess.run([str(joules_bin), "wrap", "-q", "--no-inline", "--output", str(out),
                            *extra_args, "--", *cmd], env=env, capture_output=True, timeout=600)
        if r.returncode != 0:
            raise RuntimeError(f"joules wrap failed ({r.returncode}): {r.stderr.decode()}")
        stamps = [int(x) / 1e9 for x in stamps_path.read_text().split()]
        records = [json.loads(x) for x in out.read_text().splitlines()]
    energy = energy_functions(sc, vendor)
    epoch_s = epoch_ns / 1e9

    def truth(d, a, b):
        return energy[d](b - epoch_s) - energy[d](a - epoch_s)

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
