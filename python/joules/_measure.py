"""``joules.measure``: a window around a block (``with``) or around every call of a function."""
from __future__ import annotations

import functools
import itertools
import sys
from typing import Any, Callable, Optional, TypeVar, Union, overload

from . import _state
from ._monitor import Measurement, Monitor

__all__ = ["measure", "Measure"]

F = TypeVar("F", bound=Callable[..., Any])
_serial = itertools.count(1)


class Measure:
    """A window over a ``with`` block; after the block, ``.result`` is its
    :class:`~joules.Measurement` and the Measurement's fields read through (``m.total_energy``).

    The window's name in the library is made unique (``name #N``), so the same name may be
    measured in several threads, or recursively, at once."""

    def __init__(self, name: str, *, print: bool = False, monitor: Optional[Monitor] = None,
                 sync_execution: bool = True) -> None:
        self.name = name
        self.print = print
        self.sync_execution = sync_execution
        self._monitor = monitor
        self._window: Optional[str] = None
        self._used: Optional[Monitor] = None
        self.result: Optional[Measurement] = None

    def __enter__(self) -> "Measure":
        monitor = self._monitor or _state.current_or_default()
        window = f"{self.name} #{next(_serial)}"
        monitor.begin_window(window, sync_execution=self.sync_execution)
        self._used, self._window = monitor, window
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._used is not None and self._window is not None
        m = self._used.end_window(self._window, sync_execution=self.sync_execution)
        m.name = self.name
        self.result = m
        if self.print:
            print(m.summary(), file=sys.stderr, flush=True)

    def __getattr__(self, field: str) -> Any:
        # Only reached for names Measure lacks: the Measurement's fields, once there is one.
        result = self.__dict__.get("result")
        if result is None or field.startswith("_"):
            raise AttributeError(field)
        return getattr(result, field)

    def __call__(self, func: F) -> F:
        """``@joules.measure("name")``: a window around every call of `func`."""
        return _decorate(func, self.name, self.print, self._monitor, self.sync_execution)

    def __repr__(self) -> str:
        return f"<joules.measure {self.name!r}: {self.result!r}>"


def _decorate(func: F, name: Optional[str], print_: bool, monitor: Optional[Monitor],
              sync_execution: bool) -> F:
    label: str = name or str(getattr(func, "__qualname__", getattr(func, "__name__", "function")))

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        window = Measure(label, print=print_, monitor=monitor, sync_execution=sync_execution)
        try:
            with window:
                return func(*args, **kwargs)
        finally:
            wrapper.last_measurement = window.result  # type: ignore[attr-defined]

    wrapper.last_measurement = None  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]


@overload
def measure(name: F) -> F: ...


@overload
def measure(name: Optional[str] = None, *, print: bool = False, monitor: Optional[Monitor] = None,
            sync_execution: bool = True) -> Measure: ...


def measure(name: Union[str, Callable[..., Any], None] = None, *, print: bool = False,
            monitor: Optional[Monitor] = None, sync_execution: bool = True) -> Any:
    """Measures a block or a function.

    ``with joules.measure("train") as m: ...`` then ``m.total_energy``, ``m.result``;
    ``@joules.measure`` or ``@joules.measure("name", print=True)`` on a function measures every
    call (the last one's Measurement in ``func.last_measurement``, ``.result`` of the window
    object).  `print` writes the one-line summary on stderr when the window ends (it waits for
    the numbers to be final).  `monitor`: the monitor to use (default: the current one, else one
    opened for the job's GPUs)."""
    if callable(name):
        return _decorate(name, None, print, monitor, sync_execution)
    return Measure(name or "measure", print=print, monitor=monitor, sync_execution=sync_execution)
