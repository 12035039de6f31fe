"""How the epoch length a sidecar's global steps imply relates to what the log shows of an epoch.

Used by score.py --diagnose for a file whose wrong step lines are mostly an epoch composition,
step = (epoch - base) * P + counter: for each epoch but the last, the counters of its step lines
(c, in the order printed) give the last count L, the first F and the stride S (the most common
difference between consecutive counts); P is then put in a bucket by how it relates to them
(P = L, L + 1, L + S, ...).  Only the bucket is reported, never a number, a line or a file, so
that it may be run on a held-out set.
"""

import re
from collections import Counter

NUM_RE = re.compile(r"\d+")
WORDS = ("batch", "step", "iter", "epoch", "len", "num", "total", "size", "data", "sample",
         "example", "image", "train", "per", "/", "=", ":", "[", "(")


def counters_by_epoch(lines, steps_expected, period: int, base: int) -> dict:
    """{epoch: [counter, ...]} of the step lines explained as (e - base) * period + c."""
    out = {}
    for n, w in steps_expected:
        text = lines[n - 1] if n - 1 < len(lines) else ""
        nums = [int(x) for x in NUM_RE.findall(text) if len(x) < 10]
        for e in nums:
            c = w - (e - base) * period
            if e - base >= 0 and 0 <= c <= period and c in nums:
                out.setdefault(e, []).append(c)
                break
    return out


def bucket(period: int, counts: list) -> str:
    last, first = max(counts), min(counts)
    diffs = Counter(b - a for a, b in zip(counts, counts[1:]) if b > a)
    stride = diffs.most_common(1)[0][0] if diffs else 0
    start = "from 0" if first == 0 else "from 1" if first == 1 else \
        "from the stride" if first == stride else "from another count"
    rel = period - last
    if rel == 0:
        what = "P = last count"
    elif rel == 1:
        what = "P = last count + 1"
    elif stride and rel == stride:
        what = "P = last count + stride"
    elif stride and rel % stride == 0:
        what = "P = last count + k strides (k > 1)"
    elif stride and 0 < rel < stride:
        what = "P = last count + less than a stride"
    elif rel < 0:
        what = "P < last count"
    else:
        what = "P = last count + more than a stride, not whole strides"
    return f"{what}; counts {start}; " + ("one line in the epoch" if len(counts) == 1 else
                                         "several lines")


def diagnose(lines, steps_expected, period: int, base: int, wrong: int, bump, shape_of) -> None:
    """bump(section, key, count) adds to the diagnosis; wrong is the file's wrong step lines."""
    by_epoch = counters_by_epoch(lines, steps_expected, period, base)
    first_step = steps_expected[0][0] if steps_expected else 1
    where = [i + 1 for i, text in enumerate(lines)
             if str(period) in {x for x in NUM_RE.findall(text)}]
    bump("wrong: expected epoch length P in the log's text (wrong lines)",
         "not in the log" if not where else
         "on a line before the first step" if where[0] < first_step else
         "only on lines from the first step on", wrong)
    for n in where[:3]:
        text = lines[n - 1]
        m = re.search(r"(?<!\d)" + str(period) + r"(?!\d)", text)
        before = text[max(0, m.start() - 40):m.start()].lower() if m else ""
        found = [w for w in WORDS if w in before]
        bump("wrong: words in the 40 characters before P where the log prints it (lines)",
             (", ".join(found) or "none of the list") +
             ("; before the first step" if n < first_step else "; after it") +
             ("; shape " + shape_of(text, period)), 1)
    for e in sorted(by_epoch)[:-1]:
        bump("wrong: expected epoch length P against the epoch's counts (epochs)",
             bucket(period, by_epoch[e]), 1)
