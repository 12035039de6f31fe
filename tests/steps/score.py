#!/usr/bin/env python3
"""Score `joules steps` against hand-labelled logs.

    tests/steps/score.py --joules build/release/src/joules tests/steps/heldout [DIR...] [--json]
                         [--problems] [--list FILE] [--total-only] [--diagnose]

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
collected_third_round.txt).  --total-only prints the totals and no file's row or line.
--diagnose prints, over the whole set, only counts of the wrong and missed step lines by kind of
error (how the step joules gave relates to the expected one, and the shape of the text that holds
the expected number): no file name, no line, no number from a line, so that it may be run on a
held-out set.  It is a measuring tool,
not a test: the exit status is 0 whatever the scores, 2 when a log, a sidecar or joules' output
cannot be read.
"""

import argparse
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import epoch_length

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


# What `joules steps --explain` says of a line, reduced to joules' own phrases: the diagnosis
# prints these categories, never the explanation itself (which quotes the line's template).
WHY_KINDS = (
    ("another loop, going on", r"another loop \(it goes on"),
    ("another loop, back on a line of evaluation", r"another loop \(it went back on a line of ev"),
    ("another loop, back without training values", r"another loop \(it went back on a line with"),
    ("held back (does not follow the run's step)", r"does not follow the run's step"),
    ("a candidate not taken yet", r"not taken yet"),
    ("an epoch, and the log counts steps", r"an epoch, and the log counts steps"),
    ("no field that counts steps", r"no field that counts steps"),
    ("a field that is not a step counter", r"is not a step counter"),
    ("passed over by the prefilter", r"not read further"),
    ("no number and no rule", r"no number and no rule matched"),
    ("a progress bar at 0", r"progress bar at 0"),
    ("a bar of evaluation", r"progress bar of evaluation"),
    ("a bar of data preparation", r"progress bar of data preparation"),
    ("another row of the table", r"another row of the table"),
    ("a count of updates", r"a count of updates"),
    ("evaluation results, with an epoch, tagged", r"results, with an epoch \(tagged"),
    ("evaluation results, with an epoch, by its values", r"results, with an epoch \(values"),
    ("evaluation results, no counter", r"results, no step counter"),
    ("evaluation results at the run's step, tagged", r"at the run's step \(tagged"),
    ("evaluation results at the run's step, by values", r"at the run's step \(values"),
    ("evaluation results beside the run's steps", r"beside the run's steps"),
    ("a notice", r"notice"),
)


def why_kind(why: str) -> str:
    for name, rx in WHY_KINDS:
        if re.search(rx, why):
            return name
    m = re.match(r"rule ([a-z0-9_.-]+)", why)
    return f"rule {m.group(1)}" if m else "other"


def explain_joules(joules: str, log: Path) -> dict:
    """The `why` of every line, by line number (joules steps --json --explain)."""
    proc = subprocess.run([joules, "steps", "--json", "--explain", str(log)], capture_output=True,
                          check=False)
    whys = {}
    for text in proc.stdout.decode("utf-8", errors="replace").splitlines():
        try:
            obj = json.loads(text)
        except ValueError:
            continue
        if obj.get("type") == "line":
            whys[int(obj["line"])] = str(obj.get("why", ""))
    return whys


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
    errors = []  # (line number, expected step, step joules gave or None), for --diagnose
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
                errors.append((n, want["step"], have.get("step")))
                problems.append(f"{log.name}:{n}: step {have.get('step')}, expected "
                                f"{want['step']}")
            else:
                t["missed"] += 1
                errors.append((n, want["step"], None))
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
    steps_expected = [(n, o["step"]) for n, o in sorted(expected.items()) if o["kind"] == "step"]
    return t, problems, (errors, steps_expected, got)


NUM_RE = re.compile(r"\d+")
STEP_WORDS = ("step", "iter", "it", "batch", "update", "upd", "global", "minibatch", "round",
              "tick", "nupdates", "sample", "kimg", "timestep")
EPOCH_WORDS = ("epoch", "ep", "e")


def word_class(word: str) -> str:
    w = word.lower().strip("_-. ")
    if not w:
        return "none"
    if w in EPOCH_WORDS or w.startswith("epoch"):
        return "epoch-word"
    if any(w.startswith(k) for k in STEP_WORDS):
        return "step-word"
    return "other-word"


def shape_of(line: str, value: int) -> str:
    """The shape of the text around the first whole number equal to value in line."""
    for m in NUM_RE.finditer(line):
        if int(m.group()) != value:
            continue
        a, b = m.start(), m.end()
        if a > 0 and line[a - 1] in ".-" or b < len(line) and line[b] == ".":
            continue  # part of a decimal or a date
        before, after = line[:a], line[b:]
        lead = not re.search(r"[A-Za-z0-9]", re.sub(r"^\S*\d[:\-T]\d\S*\s*", "", before))
        frac = re.match(r"\s*/\s*\d", after)
        opened = before.rstrip()[-1:] in "[("
        word = re.search(r"([A-Za-z_][A-Za-z_ .-]*?)\W*$", before)
        wc = word_class(word.group(1).split()[-1]) if word and word.group(1).split() else "none"
        if "%|" in line or re.search(r"(it/s|s/it)\]", line):
            kind = "tqdm-bar"
        elif re.search(r"\"[^\"]+\"\s*:\s*$", before):
            kind = "json-key"
        elif frac and opened:
            kind = "bracketed N/M"
        elif frac:
            kind = "bare N/M"
        elif opened:
            kind = "bracketed N"
        elif re.search(r"[=]\s*$", before):
            kind = "key=N"
        elif re.search(r":\s*$", before):
            kind = "key: N"
        elif lead:
            kind = "leading column"
        else:
            kind = "key N (word before)"
        return f"{kind}, {wc}" + (", first token" if lead and kind != "leading column" else "")
    return "expected number not in line"


def bump(diag: dict, section: str, key: str, n: int = 1) -> None:
    diag.setdefault(section, {})
    diag[section][key] = diag[section].get(key, 0) + n


def diagnose_file(log: Path, everything, diag: dict, joules: str = "") -> None:
    errs, steps_expected, got = everything
    lines = log.read_bytes().decode("utf-8", errors="replace").split("\n")
    run_of, run, prev, first_of_streak = {}, 0, None, set()
    for n, w in steps_expected:
        if prev is not None and w < prev:
            run += 1
        run_of[n] = run
        prev = w
    wrong_lines = {n for n, _, _ in errs}
    prev_n = None
    for n, w in steps_expected:
        if n in wrong_lines and (prev_n is None or prev_n not in wrong_lines):
            first_of_streak.add(n)
        prev_n = n
    last_of_run, prev_run_sum = {}, {}
    for n, w in steps_expected:
        last_of_run[run_of[n]] = max(last_of_run.get(run_of[n], 0), w)
    acc = 0
    for r in range(run + 1):
        prev_run_sum[r] = acc
        acc += last_of_run.get(r, 0)
    for n, w, g in errs:
        r = run_of.get(n, 0)
        if g is None or r == 0:
            continue
        d = g - w
        what = ("the last step of the run before" if d == last_of_run.get(r - 1) else
                "the sum of the runs before" if d == prev_run_sum[r] else
                "positive, other" if d > 0 else "negative")
        bump(diag, "wrong in a later run: got - expected", what)
        bump(diag, "wrong in a later run: joules' format, by got - expected",
             what + ": " + str(got.get(n, {}).get("format")))
        line = lines[n - 1] if n - 1 < len(lines) else ""
        feats = [name for name, rx in (("epoch word", r"(?i)\bep(och)?\b|epoch"),
                                       ("N/M", r"\d\s*/\s*\d"), ("tqdm", r"%\||it/s|s/it"),
                                       ("step word", r"(?i)step|iter|batch"),
                                       ("brackets", r"[\[(]\s*\d"))
                 if re.search(rx, line)]
        bump(diag, "wrong in a later run: line features, by got - expected",
             what + ": " + (", ".join(feats) or "none"))
    wrong_at = {n for n, _, g in errs if g is not None}
    frac_re = re.compile(r"(\d+)\s*/\s*(\d+)")
    for i in range(1, len(steps_expected)):
        (pn, pw), (n, w) = steps_expected[i - 1], steps_expected[i]
        if w >= pw or n not in wrong_at:
            continue
        a = frac_re.findall(lines[pn - 1]) if pn - 1 < len(lines) else []
        b = frac_re.findall(lines[n - 1]) if n - 1 < len(lines) else []
        between = lines[pn:n - 1]
        feats = [
            "joules " + str(got.get(n, {}).get("format")),
            "no N/M" if not a or not b else
            ("last run at its total" if int(a[-1][0]) >= int(a[-1][1]) else "last run short of its total")
            + (", same total" if a[-1][1] == b[-1][1] else ", other total"),
            "lines between: " + ("0" if not between else "1-5" if len(between) <= 5 else "6-50" if len(between) <= 50 else ">50"),
        ]
        for m in range(pn + 1, n):
            o = got.get(m, {})
            bump(diag, "new runs where joules is wrong: joules on the lines between",
                 f"{o.get('format')} {o.get('kind')}" +
                 (" (has 'epoch')" if re.search(r"(?i)epoch", lines[m - 1]) else "") +
                 (" (a bar)" if "%|" in lines[m - 1] else ""))
        if any(re.search(r"(?i)epoch", x) for x in between):
            feats.append("'epoch' between")
        if any(re.search(r"%\|", x) for x in between):
            feats.append("a bar between")
        if any(re.search(r"(?i)\b(loading|load|config|arguments|args|namespace|running training|start)", x) for x in between):
            feats.append("setup words between")
        bump(diag, "new runs (expected goes back) where joules is wrong: what is around",
             "; ".join(feats))
    for n, w, g in errs:
        bump(diag, "wrong or missed: which run of the file (expected steps go back = new run)",
             ("first run" if run_of.get(n, 0) == 0 else "a later run") +
             (", missed" if g is None else ", wrong"))
    for n in first_of_streak:
        idx = [m for m, _ in steps_expected].index(n)
        w = steps_expected[idx][1]
        pw = steps_expected[idx - 1][1] if idx else None
        g = got.get(n, {})
        bump(diag, "streaks of wrong or missed lines: how the first one starts",
             ("first step line of the file" if pw is None else
              "expected goes back there (new run)" if w < pw else
              "expected repeats" if w == pw else "expected goes on") +
             (", joules says restart" if g.get("counter_restarted") else "") +
             (", missed" if g.get("kind") != "step" else ""))
    lines = log.read_bytes().decode("utf-8", errors="replace").split("\n")
    wrong = [(n, w, g) for n, w, g in errs if g is not None]
    missed = [(n, w) for n, w, g in errs if g is None]
    if wrong:
        bump(diag, "files", "with wrong step numbers")
        diffs = {w - g for _, w, g in wrong}
        ratios = {w / g if g else None for _, w, g in wrong}
        if len(diffs) == 1:
            bump(diag, "wrong: per file", "one constant offset (expected - got) for all", len(wrong))
        elif len(ratios) == 1 and None not in ratios:
            bump(diag, "wrong: per file", "one constant ratio (expected / got) for all", len(wrong))
        else:
            # a modulus K with expected == got (mod K) on every wrong line: epoch-local counter
            ks = [d for d in diffs if d > 0]
            k = 0
            for d in ks:
                k = d if k == 0 else math.gcd(k, d)
            if k > 1 and all(w > g for _, w, g in wrong) and len(diffs) > 1:
                bump(diag, "wrong: per file", "expected = got + multiple of one K (local counter)",
                     len(wrong))
            else:
                bump(diag, "wrong: per file", "no single relation", len(wrong))
    composition(lines, wrong, diag, steps_expected)
    for n, w in missed:
        bump(diag, "missed: what joules made of the line", str(everything[2].get(n, {}).get("kind", "none")))
    for n, w, g in wrong:
        bump(diag, "wrong: joules' format", str(everything[2].get(n, {}).get("format")))
        line = lines[n - 1] if n - 1 < len(lines) else ""
        nums = {int(x) for x in NUM_RE.findall(line)}
        rel = "got > expected" if g > w else "got < expected"
        if g == 0:
            rel = "got 0"
        bump(diag, "wrong: relation", rel)
        lit = ("expected in line" if w in nums else "expected not in line") + ", " + (
            "got in line" if g in nums else "got not in line")
        bump(diag, "wrong: literal", lit)
        bump(diag, "wrong: shape of expected", shape_of(line, w))
        if g in nums:
            bump(diag, "wrong: shape of got", shape_of(line, g))
    for n, w in missed:
        line = lines[n - 1] if n - 1 < len(lines) else ""
        bump(diag, "missed: shape of expected", shape_of(line, w))
    step_lines = {m for m, _ in steps_expected}
    false_at = [m for m, o in got.items() if o.get("kind") == "step" and (o.get("step_gap") or 0) > 0
                and m not in step_lines]
    if false_at and joules:
        whys = explain_joules(joules, log)
        for m in false_at:
            why = whys.get(m, "")
            how = re.search(r"\((named as [a-z ]+|where counters stand|the epoch[a-z :]*|a count over "
                            r"its total opening the line|a counter beside the epoch or a bar's count|"
                            r"it advanced steadily while the values changed|a row [a-z ]+)"
                            r"(, (training|named) values on the line)?\)", why)
            kind = why_kind(why)
            if kind == "other" and how:
                kind = "learnt: " + how.group(1) + (how.group(2) or "")
            bump(diag, "false new steps: why joules took it (--explain, by category)", kind)
    if missed and joules:
        whys = explain_joules(joules, log)
        for n, w in missed:
            line = lines[n - 1] if n - 1 < len(lines) else ""
            kind = why_kind(whys.get(n, ""))
            bump(diag, "missed: why joules did not take it (--explain, by category)", kind)
            bump(diag, "missed: shape of expected, by why",
                 shape_of(line, w).split(", first token")[0] + ": " + kind)


def per_epoch_length(lines, rows, which: int):
    """(P, base, lines explained): the one epoch length P and base (0 or 1) that explain the most
    rows' step (rows[i][which]) as (e - base) * P + c with e and c whole numbers of the line."""
    votes = {}
    for row in rows:
        n, step = row[0], row[which]
        nums = sorted({int(x) for x in NUM_RE.findall(lines[n - 1] if n - 1 < len(lines) else "")
                       if len(x) < 10})
        seen = set()
        for e in nums:
            for c in nums:
                for base in (0, 1):
                    if e - base <= 0 or (step - c) <= 0 or (step - c) % (e - base):
                        continue
                    key = ((step - c) // (e - base), base)
                    if key not in seen:
                        seen.add(key)
                        votes[key] = votes.get(key, 0) + 1
    if not votes:
        return None, None, 0
    (p, base), count = max(votes.items(), key=lambda kv: (kv[1], -kv[0][0]))
    return p, base, count


def composition(lines, wrong, diag: dict, steps_expected) -> None:
    if not wrong:
        return
    pe, be, ce = per_epoch_length(lines, wrong, 1)
    pg, bg, cg = per_epoch_length(lines, wrong, 2)
    half = (len(wrong) + 1) // 2
    if ce < half:
        what = "expected not an epoch composition of the line's numbers"
    elif cg < half:
        what = "expected composed, got not composed from the line's numbers"
    elif pe == pg and be != bg:
        what = "same epoch length, other epoch base (0 or 1)"
    elif pe == pg:
        what = "same epoch length and base (other counter)"
    elif abs(pe - pg) == 1:
        what = "epoch length off by one"
    elif pg > pe and pg % pe == 0 or pe > pg and pe % pg == 0:
        what = "epoch length a whole multiple of the expected one" if pg > pe else \
            "expected epoch length a whole multiple of the one used"
    else:
        what = "other epoch length (" + ("longer" if pg > pe else "shorter") + ")"
    bump(diag, "wrong: epoch composition per file (lines)", what, len(wrong))
    bump(diag, "wrong: epoch composition (files)", what)
    text = "\n".join(lines)
    totals = {int(x) for x in re.findall(r"/\s*(\d+)", text) if len(x) < 10}
    if pe and ce >= half:
        epoch_length.diagnose(lines, steps_expected, pe, be, len(wrong),
                              lambda s, k, n: bump(diag, s, k, n), shape_of)
        bump(diag, "wrong: expected epoch length (lines)",
             "printed as a total (/M)" if pe in totals else
             "printed total + 1" if pe - 1 in totals else
             "printed total - 1" if pe + 1 in totals else "not printed as a total", len(wrong))
    if pg and cg >= half:
        bump(diag, "wrong: epoch length joules used (lines)",
             "printed as a total (/M)" if pg in totals else
             "printed total + 1" if pg - 1 in totals else
             "printed total - 1" if pg + 1 in totals else "not printed as a total", len(wrong))
    diffs = [w - g for _, w, g in wrong]
    distinct = len(set(diffs))
    changes = sum(1 for a, b in zip(diffs, diffs[1:]) if a != b)
    bump(diag, "wrong: expected - got along the file (lines)",
         "one value" if distinct == 1 else
         "steps of values (changes on under a tenth of lines)" if changes * 10 < len(diffs) else
         "changes often", len(wrong))
    monotone = all(b[1] >= a[1] for a, b in zip(wrong, wrong[1:]))
    bump(diag, "wrong: expected steps along the file (lines)",
         "never go back" if monotone else "go back (several runs)", len(wrong))


def print_diagnosis(diag: dict) -> None:
    for section in sorted(diag):
        print(section)
        for key, count in sorted(diag[section].items(), key=lambda kv: -kv[1]):
            print(f"  {count:>5}  {key}")


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
    ap.add_argument("--diagnose", action="store_true",
                    help="print only counts of wrong and missed step lines by kind of error")
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
    diag = {}
    total = dict.fromkeys(FIELDS, 0)
    try:
        for log in logs:
            t, probs, errs = score_file(args.joules, log)
            if args.diagnose:
                diagnose_file(log, errs, diag, args.joules)
            rows.append((log.name[:-len(".log")], t))
            problems += probs
            for k in FIELDS:
                total[k] += t[k]
    except ReadError as e:
        print(f"score.py: {e}", file=sys.stderr)
        return 2

    if args.diagnose:
        print_diagnosis(diag)
        return 0
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
