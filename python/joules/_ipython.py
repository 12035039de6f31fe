"""``%load_ext joules``: the ``%%joules`` cell magic and the ``%joules`` line magic.

``%%joules [NAME] [--quiet]`` measures the cell as a window named NAME (default ``cell``),
prints the one-line summary under the cell and keeps the Measurement in ``_joules`` (and in
``joules_measurements``, the list of every one so far).  ``%joules STATEMENT`` does the same
for one statement."""
from __future__ import annotations

import shlex
import sys
from typing import Any, List, Optional, Tuple

from ._measure import Measure
from ._monitor import Measurement

__all__ = ["register"]


def _parse(line: str) -> Tuple[str, bool]:
    words = shlex.split(line)
    quiet = "--quiet" in words or "-q" in words
    names = [w for w in words if w not in ("--quiet", "-q")]
    if len(names) > 1:
        raise ValueError(f"%%joules takes one window name, not {len(names)}: {line!r}")
    return (names[0] if names else "cell"), quiet


def _run(ipython: Any, name: str, quiet: bool, code: str) -> Measurement:
    window = Measure(name)
    with window:
        ipython.run_cell(code, store_history=False)
    m = window.result
    assert m is not None
    ipython.user_ns["_joules"] = m
    history: List[Measurement] = ipython.user_ns.setdefault("joules_measurements", [])
    history.append(m)
    if not quiet:
        print(m.summary(), file=sys.stdout, flush=True)
    return m


def register(ipython: Any) -> None:
    """Registers the magics on an IPython shell."""

    def joules_magic(line: str, cell: Optional[str] = None) -> None:
        if cell is None:
            _run(ipython, "line", False, line)
        else:
            name, quiet = _parse(line)
            _run(ipython, name, quiet, cell)

    joules_magic.__doc__ = __doc__
    ipython.register_magic_function(joules_magic, magic_kind="line_cell", magic_name="joules")
