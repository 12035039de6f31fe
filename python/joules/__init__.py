"""joules: the energy of GPU workloads, from Python.

::

    import joules

    monitor = joules.Monitor()                 # the GPUs this job may use, and CPU/DRAM
    monitor.begin_window("train")
    train()
    m = monitor.end_window("train")            # returns at once
    print(m.total_energy, m.gpu_energy, m.time, m.method)

    with joules.measure("eval", print=True):   # a block; @joules.measure for functions
        evaluate()

``joules.Tracker`` predicts a run's energy, CO2e and cost epoch by epoch, ``joules.step`` marks
training steps (exactly, under ``joules wrap``), ``joules.read`` loads the JSONL records of every
subcommand, ``%load_ext joules`` adds the ``%%joules`` cell magic.  docs/python.md has all of it.

The API is over libjoules' C API (include/joules/joules.h): one engine for the command, C and
Python.  Names are imported on first use, so ``import joules`` stays cheap.
"""
from __future__ import annotations

from ._joules import version as _library_version

# Not `from typing import TYPE_CHECKING`: importing typing (with re, enum, collections) would
# take most of `import joules`'s time; type checkers read this name the same way.
TYPE_CHECKING = False

__version__: str = _library_version()

__all__ = [
    "__version__",
    "Monitor",
    "Measurement",
    "Device",
    "DeviceEnergy",
    "measure",
    "Tracker",
    "Prediction",
    "step",
    "wrapped",
    "read",
    "JoulesError",
    "InvalidArgumentError",
    "NoDeviceError",
    "BackendError",
    "WindowNotFoundError",
    "NotReadyError",
    "StateError",
    "ForkedError",
    "NotWrappedError",
    "BudgetExceeded",
    "load_ipython_extension",
]

# name -> the submodule that defines it
_LAZY = {
    "Monitor": "_monitor", "Measurement": "_monitor", "Device": "_monitor",
    "DeviceEnergy": "_monitor", "measure": "_measure", "Tracker": "_tracker",
    "Prediction": "_tracker", "step": "_step", "wrapped": "_step", "read": "_records",
    "JoulesError": "_errors", "InvalidArgumentError": "_errors", "NoDeviceError": "_errors",
    "BackendError": "_errors", "WindowNotFoundError": "_errors", "NotReadyError": "_errors",
    "StateError": "_errors", "ForkedError": "_errors", "NotWrappedError": "_errors",
    "BudgetExceeded": "_errors",
}

if TYPE_CHECKING:
    from typing import Any

    from ._errors import (BackendError, BudgetExceeded, ForkedError, InvalidArgumentError,
                          JoulesError, NoDeviceError, NotReadyError, NotWrappedError, StateError,
                          WindowNotFoundError)
    from ._measure import measure
    from ._monitor import Device, DeviceEnergy, Measurement, Monitor
    from ._records import read
    from ._step import step, wrapped
    from ._tracker import Prediction, Tracker


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'joules' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> "list[str]":
    return sorted(set(globals()) | set(_LAZY))


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext joules``: registers the ``%%joules`` cell magic (and ``%joules``)."""
    from ._ipython import register

    register(ipython)
