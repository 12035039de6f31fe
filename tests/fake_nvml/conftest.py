"""Shared by the tests of the fake libnvidia-ml.so.1: the scenario clock and sampling helpers."""

from __future__ import annotations

import random

import pytest

import scenario as sc
from fake_nvml_ctypes import Clock

VARIANTS = ["full", "r470", "r390"]


@pytest.fixture
def clock(tmp_path):
    c = Clock(tmp_path / "clock")
    yield c
    c.close()


def at(clock: Clock, t: float) -> float:
    """Moves the scenario clock to t; returns the time exactly as the library will see it."""
    return sc.time_s(clock.set(t))


def sample_times(end: float, n: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    grid = [i * 0.01 for i in range(int(end * 100) + 1)]  # update instants and breakpoints
    return sorted(set(grid + [rng.uniform(-0.5, end) for _ in range(n)]))
