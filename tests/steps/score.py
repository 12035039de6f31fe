#!/usr/bin/env python3
"""Score `joules steps` against hand-labelled logs.

    tests/steps/score.py --joules build/release/src/joules tests/steps/heldout [DIR...] [--json]
                         [--problems] [--list FILE] [--total-only]

For every `*.log` in the directories, runs `JOULES steps --json FILE` and compares each line with
the sidecar `NAME.expected.jsonl` (the format of tests/steps/corpus/README.md: one object per line
that is a step or starts or ends a phase; every line not listed is neither).  An optional
`NAME.lookalike.jsonl` lists lines that look like steps and are not (`{"line": N, "what": ...}`);
false new steps on them are counted separately.

Per file and in total it reports:
  steps      step lines in the sidecar
  found      of those, lines joules reads as a step with the same (global) step number
  recall     found / steps
  exact      of those, also the same gap (and restart flag, where the sidecar gives one), as
             tests/steps/step_corpus_test.cpp counts them
  wrong      step lines joules reads as a step with another step number
  missed     step lines joules does not read as a step at all
  false      false new steps: joules reports a new step (kind step, step_gap > 0) on a line the
             sidecar lists as not a step
  look       look-alike lines (from NAME.lookalike.jsonl)
  f.look     look-alike lines on which joules reports a new step
  phases     phase lines in the sidecar, and how many joules finds (same kind and phase)
  f.phase    phase begins/ends joules reports on lines the sidecar lists as neither

--problems also lists every line where joules and the sidecar differ.  --list FILE scores only the
logs FILE names (one file name a line, `#` starts a comment; tests/steps/corpus/
collected_third_round.txt).  --total-only prints the totals and no file's row or line.  It is a measuring tool,
not a test: the exit status is 0 whatever the scores, 2 when a log, a sidecar or joules' output
cannot be read.
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

FIELDS = ["lines", "steps", "found", "exact", "wrong", "missed", "false", "look", "f.look",
          "phases", "phases_found", "f.phase"]


class ReadError(Exception):
    pass


def read_jsonl(path: Path, required: bool) -> dict:
    if not path.exists():
        if required:
            raise ReadError(f"no sidecar {path}")
        return {}
    out = {}
    try:
        with path.open(encoding="utf-8") as f:
            for n, text in enumerate(f, 1):
                text = text.strip()
                if not text:
                    continue
                obj = json.loads(text)
                out[int(obj["line"])] = obj
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ReadError(f"cannot read {path}: {e}") from e
    return out


def run_joules(joules: str, log: Path) -> dict:
    try:
        proc = subprocess.run([joules, "steps", "--json", str(log)], capture_output=True,
                              check=False)
    except OSError as e:
        raise ReadError(f"cannot run {joules}: {e}") from e
    if proc.returncode != 0:
        raise ReadError(f"{joules} steps --json {log} exited with {proc.returncode}: "
                        f"{proc.stderr.decode(errors='replace').strip()}")
    got = {}
    for text in proc.stdout.decode("utf-8", errors="replace").splitlines():
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except ValueError as e:
            raise ReadError(f"unreadable output of joules steps for {log}: {e}") from e
        if obj.get("type") == "line":
            got[int(obj["line"])] = obj
    return got


def count_lines(log: Path) -> int:
    try:
        data = log.read_bytes()
    except OSError as e:
        raise ReadError(f"cannot read {log}: {e}") from e
    n = data.count(b"\n")
    if data and not data.endswith(b"\n"):
        n += 1
    return n


def score_file(joules: str, log: Path):
    expected = read_jsonl(log.with_name(log.name[:-len(".log")] + ".expected.jsonl"), True)
    lookalike = read_jsonl(log.with_name(log.name[:-len(".log")] + ".lookalike.jsonl"), False)
    got = run_joules(joules, log)
    t = dict.fromkeys(FIELDS, 0)
    t["lines"] = count_lines(log)
    problems = []
    for n in range(1, t["lines"] + 1):
        want = expected.get(n)
        have = got.get(n, {"kind": "none"})
        want_kind = want["kind"] if want else "none"
        have_kind = have.get("kind", "none")
        if want_kind == "step":
            t["steps"] += 1
            if have_kind == "step" and have.get("step") == want["step"]:
                t["found"] += 1
                exact = ("gap" not in want or have.get("step_gap") == want["gap"]) and (
                    "restart" not in want or have.get("counter_restarted") == want["restart"])
                if exact:
                    t["exact"] += 1
                else:
                    problems.append(f"{log.name}:{n}: step {want['step']} found, gap "
                                    f"{have.get('step_gap')} (expected {want.get('gap')})")
            elif have_kind == "step":
                t["wrong"] += 1
                problems.append(f"{log.name}:{n}: step {have.get('step')}, expected "
                                f"{want['step']}")
            else:
                t["missed"] += 1
                problems.append(f"{log.name}:{n}: missed step {want['step']} (got {have_kind})")
        elif want_kind in ("phase_begin", "phase_end"):
            t["phases"] += 1
            if have_kind == want_kind and have.get("phase") == want.get("phase"):
                t["phases_found"] += 1
        if want_kind != "step" and have_kind == "step" and (have.get("step_gap") or 0) > 0:
            t["false"] += 1
            what = f" (look-alike: {lookalike[n].get('what', '')})" if n in lookalike else ""
            problems.append(f"{log.name}:{n}: false new step {have.get('step')}{what}")
            if n in lookalike:
                t["f.look"] += 1
        if want_kind == "none" and have_kind in ("phase_begin", "phase_end"):
            t["f.phase"] += 1
    t["look"] = sum(1 for n in lookalike if 1 <= n <= t["lines"])
    return t, problems


def pct(num: int, den: int) -> str:
    return "-" if den == 0 else f"{100.0 * num / den:.1f}%"


def print_table(rows, total) -> None:
    head = (f"{'file':<28} {'lines':>6} {'steps':>6} {'found':>6} {'recall':>7} {'exact':>6} "
            f"{'wrong':>6} {'missed':>6} {'false':>6} {'look':>5} {'f.look':>6} {'phases':>9} "
            f"{'f.phase':>7}")
    print(head)
    for name, t in rows + [("all", total)]:
        print(f"{name:<28} {t['lines']:>6} {t['steps']:>6} {t['found']:>6} "
              f"{pct(t['found'], t['steps']):>7} {t['exact']:>6} {t['wrong']:>6} "
              f"{t['missed']:>6} {t['false']:>6} {t['look']:>5} {t['f.look']:>6} "
              f"{t['phases_found']:>4}/{t['phases']:<4} {t['f.phase']:>7}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--joules", required=True, help="the joules binary")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--problems", action="store_true",
                    help="also list every line where joules and the sidecar differ")
    ap.add_argument("--list", help="score only the logs this file names")
    ap.add_argument("--total-only", action="store_true",
                    help="print the totals only, no file's row or line")
    ap.add_argument("dirs", nargs="+", help="directories holding NAME.log + NAME.expected.jsonl")
    args = ap.parse_args()

    logs = []
    for d in args.dirs:
        p = Path(d)
        if not p.is_dir():
            print(f"score.py: {d} is not a directory", file=sys.stderr)
            return 2
        logs += sorted(p.glob("*.log"))
    if args.list:
        try:
            with open(args.list, encoding="utf-8") as f:
                names = {t.split("#", 1)[0].strip() for t in f} - {""}
        except OSError as e:
            print(f"score.py: cannot read {args.list}: {e}", file=sys.stderr)
            return 2
        missing = names - {log.name for log in logs}
        if missing:
            print(f"score.py: {args.list} names logs not found: {sorted(missing)}",
                  file=sys.stderr)
            return 2
        logs = [log for log in logs if log.name in names]
    rows = []
    problems = []
    total = dict.fromkeys(FIELDS, 0)
    try:
        for log in logs:
            t, probs = score_file(args.joules, log)
            rows.append((log.name[:-len(".log")], t))
            problems += probs
            for k in FIELDS:
                total[k] += t[k]
    except ReadError as e:
        print(f"score.py: {e}", file=sys.stderr)
        return 2

    if args.json:
        def with_rates(t):
            out = dict(t)
            out["recall"] = None if t["steps"] == 0 else t["found"] / t["steps"]
            out["exact_recall"] = None if t["steps"] == 0 else t["exact"] / t["steps"]
            return out
        doc = {"total": with_rates(total)}
        if not args.total_only:
            doc["files"] = [dict(file=name, **with_rates(t)) for name, t in rows]
        if args.problems and not args.total_only:
            doc["problems"] = problems
        print(json.dumps(doc, indent=1))
        return 0
    if not args.total_only:
        print_table(rows, total)
    print(f"recall {pct(total['found'], total['steps'])} ({total['found']}/{total['steps']} step "
          f"lines with the right step number; {total['exact']} also with the right gap), "
          f"{total['wrong']} wrong step numbers, {total['missed']} missed, {total['false']} false "
          f"new steps ({total['f.look']} on {total['look']} look-alike lines), phases "
          f"{total['phases_found']}/{total['phases']}, {total['f.phase']} false phases")
    if args.problems and problems and not args.total_only:
        print("differences:")
        for p in problems:
            print("  " + p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
