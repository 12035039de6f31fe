"""The framework callbacks on the CPU, measuring the fake NVML's GPUs (tests/python/fake_gpus.py):
pytest runs in the venv of scripts/test-integrations, with the frameworks and joules."""
from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))

from fake_gpus import gpus  # noqa: E402,F401  (the fixture)
