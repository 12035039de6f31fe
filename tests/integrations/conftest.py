"""The framework callbacks on the CPU, measuring the fake NVML's GPUs (tests/python/fake_gpus.py):
pytest runs in the venv of scripts/test-integrations, with the frameworks and joules."""
from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))

from fake_gpus import gpus  # noqa: E402,F401  (the fixture)


import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def no_cuda_for_the_frameworks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The frameworks train on the CPU.  Once joules has loaded the fake libnvidia-ml.so.1,
    torch finds it too (it counts GPUs through NVML) and would try CUDA, which has no driver
    here: CUDA_VISIBLE_DEVICES="" hides the GPUs from torch, and the callbacks name theirs
    (gpus="all")."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
