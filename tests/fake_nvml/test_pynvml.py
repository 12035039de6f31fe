"""The fake serves pynvml (nvidia-ml-py), the bindings every Python peer uses.

Skipped where pynvml is not importable (Debian's python3 under CTest).  By hand:
    python3 -m venv /tmp/v && /tmp/v/bin/pip install nvidia-ml-py pytest
    FAKE_NVML_DIR=build/dev/tests/fake_nvml /tmp/v/bin/python -m pytest tests/fake_nvml/test_pynvml.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import scenario as sc
from fake_nvml_ctypes import fake_dir

try:
    import pynvml
except ImportError:
    pynvml = None

# Marked skipped rather than importorskip'd: a file of only skips exits 0, an uncollected one 5.
pytestmark = pytest.mark.skipif(pynvml is None, reason="pynvml (nvidia-ml-py) is not installed")

SCENARIO = {"devices": [
    {"power": {"type": "constant", "watts": 300}, "energy_counter": {"update_ms": 100},
     "processes": [{"pid": 77, "used_memory_bytes": 1 << 30}]},
    {"architecture": "volta", "permission": "no_permission"}]}


def run(script: str, variant: str = "full") -> dict:
    """Runs pynvml in a child whose loader finds the fake first; returns its JSON output."""
    env = dict(os.environ, LD_LIBRARY_PATH=str(fake_dir() / variant),
               FAKE_NVML_SCENARIO=json.dumps(SCENARIO))
    env.pop("FAKE_NVML_CLOCK_FILE", None)
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def test_pynvml_reads_the_scenario():
    r = run("""
        import json, pynvml, time
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        try:
            pynvml.nvmlDeviceGetHandleByIndex(1)
            perm = "ok"
        except pynvml.NVMLError_NoPermission:
            perm = "no_permission"
        e0 = pynvml.nvmlDeviceGetTotalEnergyConsumption(h)
        time.sleep(0.5)
        e1 = pynvml.nvmlDeviceGetTotalEnergyConsumption(h)
        mem = pynvml.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2)
        fv = pynvml.nvmlDeviceGetFieldValues(h, [pynvml.NVML_FI_DEV_POWER_INSTANT])[0]
        print(json.dumps({
            "count": pynvml.nvmlDeviceGetCount(), "perm": perm,
            "name": pynvml.nvmlDeviceGetName(h), "driver": pynvml.nvmlSystemGetDriverVersion(),
            "delta_mj": e1 - e0, "power": pynvml.nvmlDeviceGetPowerUsage(h),
            "instant": fv.value.uiVal, "reserved": mem.reserved,
            "pids": [p.pid for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h)],
            "arch": pynvml.nvmlDeviceGetArchitecture(h),
        }))
        pynvml.nvmlShutdown()
    """)
    assert r["count"] == 2 and r["perm"] == "no_permission"
    assert r["name"] == "NVIDIA H100 80GB HBM3" and r["driver"] == "570.86.15"
    assert 120000 <= r["delta_mj"] <= 210000  # 300 W for 0.5 s, counter steps of 100 ms
    assert r["power"] == r["instant"] == 300000
    assert r["reserved"] == 536870912 and r["pids"] == [77] and r["arch"] == 9


def test_pynvml_on_an_old_driver_raises_function_not_found():
    r = run("""
        import json, pynvml
        try:
            pynvml.nvmlInit()
            print(json.dumps({"init": "ok"}))
        except pynvml.NVMLError as e:
            print(json.dumps({"init": e.value}))
    """, "r390")
    assert r["init"] == 13  # NVML_ERROR_FUNCTION_NOT_FOUND  # no nvmlInitWithFlags in R390
