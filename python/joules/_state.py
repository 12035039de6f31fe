"""The process's current monitor: the one ``joules.step`` and ``joules.measure`` use.

The current monitor is the last one opened and not yet closed; when there is none, ``measure``
and ``step`` open a default one (the job's GPUs, ``JOULES_BACKEND`` or auto).  After fork() the
child forgets both: a monitor's reading thread lives only in the process that opened it."""
from __future__ import annotations

import atexit
import os
import threading
TYPE_CHECKING = False  # not typing's: `import joules` stays free of it
if TYPE_CHECKING:
    from typing import List, Optional

    from ._monitor import Monitor

__all__ = ["opened", "closed", "current", "current_or_default"]

_lock = threading.RLock()
_open: List["Monitor"] = []
_default: Optional["Monitor"] = None


def opened(monitor: "Monitor") -> None:
    """`monitor` has just opened: it becomes the current one."""
    with _lock:
        _open.append(monitor)


def closed(monitor: "Monitor") -> None:
    """`monitor` has closed: the one opened before it becomes current again."""
    global _default
    with _lock:
        if monitor in _open:
            _open.remove(monitor)
        if _default is monitor:
            _default = None


def current() -> Optional["Monitor"]:
    """The last monitor opened in this process and not closed, or None."""
    with _lock:
        return _open[-1] if _open else None


def current_or_default() -> "Monitor":
    """The current monitor, else a default one opened now (the job's GPUs and CPU).

    ``JOULES_BACKEND`` (auto, nvml, sim) chooses its backend, as for the command."""
    global _default
    with _lock:
        if _open:
            return _open[-1]
        from ._monitor import Monitor

        _default = Monitor(backend=os.environ.get("JOULES_BACKEND", "auto") or "auto")
        return _default


def _forget_after_fork() -> None:
    global _lock, _default
    # The lock may have been held by another thread at fork(): a new one, never that one.
    _lock = threading.RLock()
    _open.clear()
    _default = None


def _close_all() -> None:
    """At exit: every monitor still open is closed, its windows made final first."""
    with _lock:
        monitors = list(reversed(_open))
    for monitor in monitors:
        try:
            monitor.close()
        except Exception:  # exiting: a monitor that cannot close has nothing left to lose
            pass


os.register_at_fork(after_in_child=_forget_after_fork)
atexit.register(_close_all)
