"""``joules.step``: the exact end of a training step, for ``joules wrap`` or the current monitor."""
from __future__ import annotations

from typing import Optional

from . import _joules, _state
from ._monitor import Measurement, Monitor

__all__ = ["step", "wrapped"]


def wrapped() -> bool:
    """Whether this process runs under ``joules wrap`` (which then hears of every step)."""
    return _joules.wrapped()


def step(tokens: Optional[int] = None, *, step: Optional[int] = None,
         monitor: Optional[Monitor] = None) -> Optional[Measurement]:
    """A training step ended now; `tokens` it processed (None: unknown), `step` its number
    (None: one more than the last).

    Under ``joules wrap`` this tells wrap the exact boundary (no log line needed; wrap records
    the step's energy and joules per token).  With a monitor open in this process (the current
    one, or `monitor`), the monitor keeps the step's window too, from the previous step (or its
    opening) to now, and its :class:`~joules.Measurement` is returned.  Outside wrap with no
    monitor open, a default monitor is opened for the job's GPUs.  Returns None only under wrap
    with no monitor open."""
    if tokens is not None and tokens < 0:
        raise ValueError(f"tokens must be >= 0, not {tokens}")
    if step is not None and step < 0:
        raise ValueError(f"step must be >= 0, not {step}")
    if monitor is None:
        monitor = _state.current()
        if monitor is None:
            if _joules.wrapped():
                _joules.step(step or 0, tokens or 0)
                return None
            monitor = _state.current_or_default()
    return monitor.step(tokens=tokens, step=step)
