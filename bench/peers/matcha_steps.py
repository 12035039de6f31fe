"""matcha's step detection over log files, exactly as `matcha wrap` applies it to each line it
reads: matcha.cli._detect (its pattern list), and the window bookkeeping of cli._wrap (the first
detected line opens a window; every later one closes a window with step_gap = max(det - last, 1)).

    python matcha_steps.py FILE...

Prints one JSON object per file: {"file": ..., "lines": {line_number: [step, step_gap, record]}},
where record is false for the first detected line (matcha emits no step record for it).
Lines are split as matcha's text-mode pipe splits them (universal newlines: \\r ends a line too),
but numbered by \\n as an editor numbers them, so that they match the corpus' sidecars.
"""
import json
import sys

from matcha.cli import _detect


def main():
    for path in sys.argv[1:]:
        with open(path, "rb") as f:
            raw = f.read().decode("utf-8", "replace")
        out, last, active = {}, None, False
        for n, line in enumerate(raw.split("\n"), start=1):
            # matcha reads the pipe in text mode: a \r splits a line into several matcha lines.
            for part in line.replace("\r\n", "\n").split("\r"):
                det = _detect(part)
                if det is None:
                    continue
                record = bool(active and last is not None)
                gap = max(det - last, 1) if record else 1
                out.setdefault(str(n), []).append([det, gap, record])
                active, last = True, det
        print(json.dumps({"file": path, "lines": out}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
