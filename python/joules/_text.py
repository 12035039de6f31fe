"""Text for people: outside strings made safe for a terminal, numbers with their units."""
from __future__ import annotations

import math
TYPE_CHECKING = False  # not typing's: `import joules` stays free of it
if TYPE_CHECKING:
    from typing import Optional

__all__ = ["escape", "joules_text", "seconds_text"]


def escape(text: str) -> str:
    """``text`` with control characters (C0, DEL, C1) and backslashes written as escapes.

    Window names, labels and GPU names come from outside joules; printed raw, an escape sequence
    in one could move the cursor or retitle the terminal.  Printable text, non-ASCII letters
    included, is kept as it is."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif code < 0x20 or 0x7F <= code < 0xA0:
            out.append(repr(ch)[1:-1] if ch in "\t\n\r" else f"\\x{code:02x}")
        elif ch in "\u2028\u2029" or 0xD800 <= code < 0xE000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)


def joules_text(energy_j: Optional[float]) -> str:
    """``1234 J (0.343 Wh)``, or ``unknown``."""
    if energy_j is None or math.isnan(energy_j):
        return "unknown"
    wh = energy_j / 3600.0
    return f"{energy_j:.4g} J ({wh:.3g} Wh)" if abs(energy_j) < 1e4 else f"{energy_j:.0f} J ({wh:.4g} Wh)"


def seconds_text(seconds: float) -> str:
    """``3.20 s``, ``12 min 5 s`` or ``2 h 3 min``."""
    if seconds < 60:
        return f"{seconds:.2f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60)} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60)} min"
