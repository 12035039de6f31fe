"""The Python package as a user has it: pytest runs inside the virtual environment into which
scripts/test-python (or test-wheel) installed joules, against the fake NVML (fake_gpus.py)."""
from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from fake_gpus import gpus  # noqa: E402,F401  (the fixture)
