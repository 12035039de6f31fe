"""The step windows the Lightning and Keras callbacks share: begun and ended around each batch,
read without waiting while training runs, so that logging energy never slows a step."""
from __future__ import annotations

from collections import deque
from typing import Any, Deque, List, Optional, Tuple

from .. import _joules
from .._monitor import Measurement, Monitor

__all__ = ["StepWindows"]


class StepWindows:
    """Windows named ``<owner> step``, one open at a time, and the finished ones in order."""

    def __init__(self, owner: str, monitor: Optional[Monitor], monitor_options: Any) -> None:
        self.owner = owner
        self.monitor = monitor
        self.owns_monitor = monitor is None
        self.monitor_options = monitor_options
        self.pending: Deque[Tuple[Measurement, Optional[int]]] = deque()
        self.total_energy = 0.0
        self.total_error = 0.0
        self.total_time = 0.0
        self.steps = 0
        self.tokens = 0
        self.last: Optional[Measurement] = None
        self.run: Optional[Measurement] = None
        self._wrapped = False
        self._open = False

    def start(self) -> None:
        if self.monitor is None:
            self.monitor = Monitor(**self.monitor_options)
        self._wrapped = _joules.wrapped()
        self.monitor.begin_window(f"{self.owner} run")

    def begin(self) -> None:
        assert self.monitor is not None
        if self._open:  # a batch whose end never came (an exception the loop caught)
            self.monitor.end_window(f"{self.owner} step", cancel=True)
        self.monitor.begin_window(f"{self.owner} step")
        self._open = True

    def end(self, step: int, tokens: Optional[int]) -> None:
        assert self.monitor is not None
        if not self._open:
            return
        self._open = False
        m = self.monitor.end_window(f"{self.owner} step")
        self.pending.append((m, tokens))
        if self._wrapped:
            _joules.step(step, tokens or 0)

    def collect(self, wait: bool = False) -> List[Tuple[Measurement, Optional[int]]]:
        """The step windows that are final now, in order (`wait`: all of them, waiting)."""
        done = []
        while self.pending and (wait or self.pending[0][0].ready):
            m, tokens = self.pending.popleft()
            self.total_energy += m.total_energy
            self.total_error += m.error
            self.total_time += m.time
            self.steps += 1
            self.tokens += tokens or 0
            self.last = m
            done.append((m, tokens))
        return done

    def finish(self) -> Measurement:
        assert self.monitor is not None
        if self._open:
            self.monitor.end_window(f"{self.owner} step", cancel=True)
            self._open = False
        self.collect(wait=True)
        self.run = self.monitor.end_window(f"{self.owner} run")
        self.run.wait()
        if self.owns_monitor:
            self.monitor.close()
            self.monitor = None
        return self.run
