"""Helpers of the Python package's tests (tests/python, tests/integrations): the fake
libnvidia-ml.so.1 (tests/fake_nvml) loaded with a scenario whose time is known, so that every
energy has an exact truth, and the virtual environment the tests run in."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import time
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest


ROOT = pathlib.Path(__file__).resolve().parents[2]
FAKE_NVML_DIR = pathlib.Path(os.environ.get("FAKE_NVML_DIR", ROOT / "build" / "dev" / "tests" /
                                            "fake_nvml"))
VENV_BIN = pathlib.Path(sys.executable).parent

sys.path.insert(0, str(ROOT / "tests" / "fake_nvml"))
import scenario as fake  # noqa: E402  (tests/fake_nvml/scenario.py: the exact truth)

# Hermetic: the host's RAPL counters and region never reach a test that compares with GPU truth.
os.environ["JOULES_POWERCAP_ROOT"] = str(ROOT / "tests" / "fixtures" / "powercap" / "absent")
for name in ("JOULES_REGION", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "JOULES_RUN_ID",
             "SLURM_JOB_ID", "JOULES_BACKEND"):
    os.environ.pop(name, None)


# Windows of 0.1-0.3 s on a machine whose cores are shared: a reading thread preempted for a
# millisecond between its timestamp and its read misplaces an edge by that much, a percent of
# such a window.  Windows of a second and more are held to 0.5 % (test_monitor.py).
SHORT_WINDOW_REL = 0.03


def h100(power: Dict[str, Any], **extra: Any) -> Dict[str, Any]:
    d = {"name": "NVIDIA H100 80GB HBM3", "architecture": "hopper", "latency_us": 20,
         "power": power}
    d.update(extra)
    return d


def constant(watts: float) -> Dict[str, Any]:
    return {"type": "constant", "watts": watts}


class FakeGpus:
    """A scenario loaded into this process's environment: the next Monitor opened reads it.

    Scenario time 0 is `before_s` in the past (a real counter has been running since the
    driver loaded); `truth(i, t0, t1)` is device i's exact energy between two CLOCK_MONOTONIC
    instants in seconds."""

    def __init__(self, scenario: Dict[str, Any], variant: str = "full",
                 before_s: float = 10.0) -> None:
        self.scenario = scenario
        self.epoch_ns = time.monotonic_ns() - int(before_s * 1e9)
        self.env = {
            "JOULES_NVML_LIBRARY": str(FAKE_NVML_DIR / variant / "libnvidia-ml.so.1"),
            "FAKE_NVML_SCENARIO": json.dumps(scenario),
            "FAKE_NVML_EPOCH_NS": str(self.epoch_ns),
        }
        self._devices = fake.load(scenario).devices

    def truth(self, device: int, t0: float, t1: float) -> float:
        epoch = self.epoch_ns / 1e9
        d = self._devices[device]
        return d.energy_j(t1 - epoch) - d.energy_j(t0 - epoch)

    def scenario_time(self, mono_s: float) -> float:
        return mono_s - self.epoch_ns / 1e9


@pytest.fixture
def gpus(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Call with a scenario dict: its environment is set for this test and the FakeGpus
    returned."""
    made: List[FakeGpus] = []

    def load(scenario: Dict[str, Any], variant: str = "full", before_s: float = 10.0) -> FakeGpus:
        g = FakeGpus(scenario, variant, before_s)
        for k, v in g.env.items():
            monkeypatch.setenv(k, v)
        made.append(g)
        return g

    yield load




def run_python(code: str, env: Optional[Dict[str, str]] = None, timeout: float = 60,
               args: Tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """Runs `code` with this venv's interpreter in a fresh process."""
    full = dict(os.environ)
    full.update(env or {})
    return subprocess.run([sys.executable, "-c", code, *args], env=full, capture_output=True,
                          text=True, timeout=timeout)


def venv_env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """The environment of a shell in which this venv is active: its bin/ first on PATH."""
    env = dict(os.environ)
    env["PATH"] = f"{VENV_BIN}{os.pathsep}/usr/bin{os.pathsep}/bin"
    env.pop("PYTHONPATH", None)
    env.update(extra or {})
    return env
