#!/usr/bin/env python3
"""The Python package's figures, beside the peers' (run by `make bench`, or alone):

    bench/python_package.py WHEEL [--repeat N] [--out RESULT.json]

- the time `import` takes (in a fresh interpreter, the import alone, median of N) for joules and
  for what a user of each peer imports: `zeus.monitor`, `codecarbon`, `carbontracker.tracker`,
  `matcha`; all from bench/.venv, the same interpreter, into which WHEEL is installed;
- the wheel's size, and how long `pip install` takes from the wheel file into a fresh venv;
- the Python-level cost of `begin_window` + `end_window` (the numbers are not read), joules and
  ZeusMonitor, on 8 fake H100s (tests/fake_nvml, 20 us per NVML call as the tests use).

Prints a Markdown table and writes the numbers to RESULT.json (default
bench/results/DATE-python.json).  The peers come from bench/requirements.txt (bench/run makes
bench/.venv); the fake NVML from build/release.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
VENV = HERE / ".venv"
VPY = VENV / "bin" / "python"
FAKE_FULL = ROOT / "build" / "release" / "tests" / "fake_nvml" / "full"

IMPORTS = {
    "joules": "import joules",
    # What a Zeus user's changed import loads: the Monitor's module too.
    "joules.Monitor": "from joules import Monitor",
    "zeus": "from zeus.monitor import ZeusMonitor",
    "codecarbon": "from codecarbon import EmissionsTracker",
    "carbontracker": "from carbontracker.tracker import CarbonTracker",
    "matcha": "import matcha",
}

TIMED_IMPORT = ("import time\nt = time.perf_counter()\n{stmt}\n"
                "print(time.perf_counter() - t)\n")

SCENARIO = {"devices": [{"name": "NVIDIA H100 80GB HBM3", "architecture": "hopper",
                         "latency_us": 20, "power": {"type": "constant", "watts": 500}}
                        for _ in range(8)]}

WINDOW_LOOP = """
import json, sys, time
tool, n = sys.argv[1], int(sys.argv[2])
if tool == "joules":
    import joules
    monitor = joules.Monitor(cpu=False, sync_execution_with=None)
else:
    from zeus.monitor import ZeusMonitor
    monitor = ZeusMonitor(cpu_indices=[])
for i in range(20):  # warm-up
    monitor.begin_window(f"w{i}", sync_execution=False)
    monitor.end_window(f"w{i}", sync_execution=False)
samples = []
for i in range(n):
    t = time.perf_counter()
    monitor.begin_window("w", sync_execution=False)
    monitor.end_window("w", sync_execution=False)
    samples.append(time.perf_counter() - t)
print(json.dumps(samples))
"""


def fake_env() -> dict:
    env = dict(os.environ)
    env.update({
        "LD_LIBRARY_PATH": str(FAKE_FULL),
        "JOULES_NVML_LIBRARY": str(FAKE_FULL / "libnvidia-ml.so.1"),
        "FAKE_NVML_SCENARIO": json.dumps(SCENARIO),
        "FAKE_NVML_EPOCH_NS": str(time.monotonic_ns() - 10_000_000_000),
        "JOULES_POWERCAP_ROOT": str(ROOT / "tests" / "fixtures" / "powercap" / "absent"),
    })
    return env


def import_times(repeat: int) -> dict:
    out = {}
    for tool, stmt in IMPORTS.items():
        subprocess.run([str(VPY), "-c", stmt], check=True, capture_output=True)  # warm the cache
        samples = []
        for _ in range(repeat):
            r = subprocess.run([str(VPY), "-c", TIMED_IMPORT.format(stmt=stmt)], check=True,
                               capture_output=True, text=True)
            samples.append(float(r.stdout.split()[-1]))  # codecarbon prints notes first
        out[tool] = {"median_ms": statistics.median(samples) * 1e3,
                     "min_ms": min(samples) * 1e3, "runs": repeat}
    return out


def install_times(wheel: pathlib.Path, repeat: int) -> dict:
    samples = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="joules-install-") as d:
            subprocess.run([sys.executable, "-m", "venv", "--without-pip", d], check=True)
            t = time.perf_counter()
            subprocess.run([str(VPY), "-m", "pip", "--python", f"{d}/bin/python", "install",
                            "--disable-pip-version-check", "--no-index", "--no-deps", "-q",
                            str(wheel)], check=True)
            samples.append(time.perf_counter() - t)
    return {"median_s": statistics.median(samples), "min_s": min(samples), "runs": repeat}


def window_costs(n: int) -> dict:
    out = {}
    for tool in ("joules", "zeus"):
        r = subprocess.run([str(VPY), "-c", WINDOW_LOOP, tool, str(n)], env=fake_env(),
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            out[tool] = {"error": r.stderr.strip().splitlines()[-1:]}
            continue
        samples = json.loads(r.stdout.strip().splitlines()[-1])
        samples.sort()
        out[tool] = {"median_us": statistics.median(samples) * 1e6,
                     "p99_us": samples[int(0.99 * (len(samples) - 1))] * 1e6, "pairs": n}
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("wheel", type=pathlib.Path)
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--out", type=pathlib.Path)
    a = p.parse_args()
    if not VPY.exists():
        sys.exit("bench: bench/.venv is missing: run bench/run (make bench) first")
    subprocess.run([str(VPY), "-m", "pip", "install", "--disable-pip-version-check", "-q",
                    "--no-deps", "--force-reinstall", str(a.wheel)], check=True)
    results = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(["bench/python_package.py", *sys.argv[1:]]),
        "wheel": a.wheel.name,
        "wheel_bytes": a.wheel.stat().st_size,
        "load_average_at_start": list(os.getloadavg()),
        "import": import_times(a.repeat),
        "pip_install": install_times(a.wheel, max(3, a.repeat // 3)),
        "window": window_costs(2000),
    }
    out = a.out or HERE / "results" / f"{datetime.date.today().isoformat()}-python.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print("| figure | joules | zeus | codecarbon | carbontracker | matcha |")
    print("|---|---|---|---|---|---|")
    imp = results["import"]
    peers = [t for t in IMPORTS if not t.startswith("joules")]
    print(f"| `import` (median ms) | {imp['joules']['median_ms']:.1f} (`from joules import "
          f"Monitor`: {imp['joules.Monitor']['median_ms']:.1f}) | "
          + " | ".join(f"{imp[t]['median_ms']:.1f}" for t in peers) + " |")
    win = results["window"]

    def cost(tool: str) -> str:
        return f"{win[tool]['median_us']:.1f}" if "median_us" in win.get(tool, {}) else "failed"

    print(f"| `begin_window` + `end_window`, 8 GPUs (median us) | {cost('joules')} | "
          f"{cost('zeus')} | - | - | - |")
    print(f"\nwheel {a.wheel.name}: {results['wheel_bytes'] / 1e6:.2f} MB; pip install from the "
          f"file: {results['pip_install']['median_s']:.2f} s (median of "
          f"{results['pip_install']['runs']}); results in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
