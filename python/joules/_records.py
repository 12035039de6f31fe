"""``joules.read``: the JSONL records joules writes (docs/jsonl-schema.md), as a table."""
from __future__ import annotations

import importlib.util
import json
import os
from typing import IO, Any, Dict, Iterable, List, Optional, Union

__all__ = ["read", "iter_records"]

PathOrFile = Union[str, "os.PathLike[str]", IO[str]]


def iter_records(source: PathOrFile, type: Optional[Union[str, Iterable[str]]] = None,
                 ) -> Iterable[Dict[str, Any]]:
    """Yields the records of a JSONL file one by one (`type`: only records of that type or
    types).  Blank lines are skipped; a line that is not a JSON object raises ValueError naming
    the file and line.  A file cut short by a killed writer ends with a complete line: joules
    writes each record with a single write."""
    wanted = {type} if isinstance(type, str) else (set(type) if type is not None else None)
    if isinstance(source, (str, os.PathLike)):
        name = os.fspath(source)
        with open(source, encoding="utf-8") as f:
            yield from _parse(f, name, wanted)
    else:
        yield from _parse(source, getattr(source, "name", "<stream>"), wanted)


def _parse(lines: IO[str], name: str,
           wanted: Optional["set[str]"]) -> Iterable[Dict[str, Any]]:
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{name}:{number}: not a JSON record: {e.msg}") from None
        if not isinstance(record, dict):
            raise ValueError(f"{name}:{number}: not a JSON object")
        if wanted is None or record.get("type") in wanted:
            yield record


def read(source: PathOrFile, type: Optional[Union[str, Iterable[str]]] = None,
         frame: Optional[bool] = None) -> Any:
    """The records of a JSONL file written by ``joules run``, ``wrap``, ``monitor --json`` or a
    :class:`~joules.Tracker`: a pandas DataFrame (one row per record, nested objects as their
    values) when pandas is installed, else a list of dicts.

    `type`: only records of that type (``"step"``) or types.  `frame`: True to require a
    DataFrame, False for plain dicts, None for a DataFrame when pandas is there."""
    records: List[Dict[str, Any]] = list(iter_records(source, type))
    if frame is False or (frame is None and importlib.util.find_spec("pandas") is None):
        return records
    import pandas  # only now: importing it costs far more than joules itself

    return pandas.DataFrame.from_records(records)
