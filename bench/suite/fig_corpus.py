"""Step-format recognition on the corpus of real trainer log lines (tests/steps/corpus: lines
from over 50 trainers' code, docs and users' logs, with the expected result of every line):
recall and false steps, joules (`joules steps --json`) against matcha's parser (bench/peers/
matcha_steps.py: matcha.cli._detect and wrap's window bookkeeping).

Run alone, `python3 bench/suite/fig_corpus.py [JOULES]` prints joules' figures only (no peer
needed), for the whole corpus and for the files collected before any rule was written for
their trainers (tests/steps/corpus/collected_before_rules.txt): step lines read with the right
global step (the step number, and new or repeated as the sidecar says) and new steps made of
look-alike lines (lines that are not step lines and hold a digit).  Give it a joules built at
another commit to compare parsers.

A step line counts as found when the tool makes it a step boundary with the expected step number
and, where the sidecar gives one, the expected number of steps in the window (the gap: 0 for a
repeated step number, k for a log every k steps): these two decide which window the energy goes
to and how it is divided.  A false step is a boundary on a line that is not a step (a phase
line, a download bar, a checkpoint message, ...).  step_corpus_test.cpp also checks phases,
metrics and restart flags; those are joules-only and not compared here."""
from __future__ import annotations

import json
import pathlib
import subprocess
import sys

if __package__:
    from .common import JOULES, PEERS, ROOT, VPY
    from .render import fmt_pct, fmt_ratio
else:  # run as a script
    ROOT = pathlib.Path(__file__).resolve().parents[2]
    JOULES = ROOT / "build" / "release" / "src" / "joules"

NAME = "corpus"
CORPUS = ROOT / "tests" / "steps" / "corpus"


def _expected(log):
    out = {}
    for line in log.with_suffix(".expected.jsonl").read_text().splitlines():
        if line.strip():
            e = json.loads(line)
            out[e["line"]] = e
    return out


def _score(expected, got, log=None):
    """got: {line: (step, gap)} of the boundaries a tool made.  Returns the tallies; with the
    log, also the look-alike lines and the new steps made of them."""
    t = {"step_lines": 0, "found": 0, "right": 0, "false_steps": 0, "repeat_lines": 0,
         "repeats_as_new": 0, "lookalike_lines": 0, "false_new_steps": 0}
    for n, e in expected.items():
        if e["kind"] != "step":
            continue
        t["step_lines"] += 1
        g = got.get(n)
        if e.get("gap") == 0:
            t["repeat_lines"] += 1
            if g is not None and g[1] != 0:
                t["repeats_as_new"] += 1
        if g is not None and g[0] == e["step"] and ("gap" not in e or g[1] == e["gap"]):
            t["found"] += 1
        if g is not None and g[0] == e["step"] and (g[1] == 0) == (e.get("gap") == 0):
            t["right"] += 1
    for n in got:
        e = expected.get(n)
        if e is None or e["kind"] != "step":
            t["false_steps"] += 1
    if log is not None:
        lines = log.read_bytes().split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        for n, raw in enumerate(lines, 1):
            e = expected.get(n)
            if (e is None or e["kind"] != "step") and any(48 <= c <= 57 for c in raw):
                t["lookalike_lines"] += 1
                g = got.get(n)
                if g is not None and g[1] > 0:
                    t["false_new_steps"] += 1
    return t


def _joules_steps(joules, log):
    jp = subprocess.run([str(joules), "steps", "--json", str(log)], capture_output=True,
                        text=True, check=True, timeout=120)
    got = {}
    for line in jp.stdout.splitlines():
        r = json.loads(line)
        if r.get("type") == "line" and r.get("kind") == "step":
            got[r["line"]] = (r["step"], r["step_gap"])
    return got


def _collected_before_rules():
    listed = (CORPUS / "collected_before_rules.txt").read_text().splitlines()
    return {x for x in listed if x and not x.startswith("#")}


def joules_figures(joules) -> dict:
    """joules' figures on the whole corpus and on the files collected before their rules."""
    logs = sorted(CORPUS.glob("*.log"))
    before = _collected_before_rules()
    out = {}
    for name, subset in (("corpus", logs), ("collected before rules",
                                            [x for x in logs if x.name in before])):
        total = {}
        for log in subset:
            for k, v in _score(_expected(log), _joules_steps(joules, log), log).items():
                total[k] = total.get(k, 0) + v
        total["files"] = len(subset)
        out[name] = total
    return out


def run(ctx) -> dict:
    logs = sorted(CORPUS.glob("*.log"))
    per = {}
    mp = subprocess.run([str(VPY), str(PEERS / "matcha_steps.py"), *map(str, logs)],
                        capture_output=True, text=True, check=True, timeout=300)
    matcha = {}
    for line in mp.stdout.splitlines():
        r = json.loads(line)
        # The last boundary matcha makes on a line (a \r-rewritten bar is several matcha lines).
        matcha[r["file"]] = {int(n): (v[-1][0], v[-1][1]) for n, v in r["lines"].items()}
    for log in logs:
        exp = _expected(log)
        got = _joules_steps(JOULES, log)
        per[log.stem] = {"joules": _score(exp, got, log), "matcha": _score(exp, matcha[str(log)], log)}
    total = {}
    for tool in ("joules", "matcha"):
        total[tool] = {k: sum(p[tool][k] for p in per.values()) for k in per[logs[0].stem][tool]}
        total[tool]["recall_percent"] = 100.0 * total[tool]["found"] / total[tool]["step_lines"]
    ctx.log(f"corpus: joules {total['joules']}, matcha {total['matcha']}")
    return {"files": per, "total": total, "corpus_files": len(logs),
            "cannot": {"zeus": "does not read training logs", "codecarbon": "does not read "
                       "training logs", "carbontracker": "does not read training logs"}}


def tables(res: dict) -> list[dict]:
    tj, tm = res["total"]["joules"], res["total"]["matcha"]
    miss_j = 100 - tj["recall_percent"]
    miss_m = 100 - tm["recall_percent"]
    head = [["joules", str(tj["step_lines"]), fmt_pct(tj["recall_percent"]), str(tj["false_steps"]),
             f"{tj['repeats_as_new']} of {tj['repeat_lines']}"],
            ["matcha 0.3.1", str(tm["step_lines"]), fmt_pct(tm["recall_percent"]),
             str(tm["false_steps"]), f"{tm['repeats_as_new']} of {tm['repeat_lines']}"]]
    rows = []
    for name, p in sorted(res["files"].items()):
        j, m = p["joules"], p["matcha"]
        rows.append([name, str(j["step_lines"]), f"{j['found']}", str(j["false_steps"]),
                     f"{m['found']}", str(m["false_steps"])])
    return [
        {"title": f"Step recognition on the corpus ({res['corpus_files']} logs)",
         "columns": ["parser", "step lines", "recall", "false steps",
                     "repeated step numbers made new steps"],
         "rows": head,
         "notes": [f"Steps missed: joules {fmt_pct(miss_j)}, matcha {fmt_pct(miss_m)} "
                   f"(matcha misses {fmt_ratio((miss_m / miss_j) if miss_j else None)} as many); "
                   "Zeus, CodeCarbon, carbontracker: cannot — they do not read training logs."]},
        {"title": "Per trainer (step lines found, false steps)",
         "columns": ["corpus file", "step lines", "joules found", "joules false", "matcha found",
                     "matcha false"],
         "rows": rows},
    ]


if __name__ == "__main__":
    for name, t in joules_figures(sys.argv[1] if len(sys.argv) > 1 else JOULES).items():
        print(f"{name}: {t['files']} files, {t['step_lines']} step lines, "
              f"{100.0 * t['right'] / max(1, t['step_lines']):.1f}% with the right global step "
              f"({t['found']} with the exact gap), {t['false_steps']} false steps, "
              f"{t['false_new_steps']} false new steps among {t['lookalike_lines']} look-alike "
              f"lines ({100.0 * t['false_new_steps'] / max(1, t['lookalike_lines']):.2f}%)")
