"""`joules steps` as a user sees it: the real trainer logs of tests/steps/corpus, text and JSON."""
import json
import pathlib
import subprocess

import pytest

from conftest import JOULES, ROOT, joules

CORPUS = ROOT / "tests" / "steps" / "corpus"
LOGS = sorted(CORPUS.glob("*.log"))


def expected(log):
    rows = {}
    for line in log.with_suffix(".expected.jsonl").read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            rows[row["line"]] = row
    return rows


def json_lines(stdout):
    objs = [json.loads(line) for line in stdout.splitlines()]
    return [o for o in objs if o["type"] == "line"], [o for o in objs if o["type"] == "summary"]


def test_corpus_is_there():
    assert len(LOGS) >= 20


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem)
def test_json_output_matches_the_corpus_expectations(log):
    r = joules("steps", "--json", log)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    lines, summary = json_lines(r.stdout)
    n_lines = len(log.read_bytes().split(b"\n")) - (1 if log.read_bytes().endswith(b"\n") else 0)
    assert [o["line"] for o in lines] == list(range(1, n_lines + 1))
    assert len(summary) == 1 and summary[0]["lines"] == n_lines
    want = expected(log)
    missed = 0
    for o in lines:
        e = want.get(o["line"])
        if e is None:
            assert o["kind"] != "step", f"{log.name}:{o['line']}: false step {o}"
            continue
        if e["kind"] == "step":
            ok = o["kind"] == "step" and o["step"] == e["step"]
            ok = ok and ("gap" not in e or o["step_gap"] == e["gap"])
            missed += not ok
        else:
            assert o["kind"] in ("none", e["kind"])
            if o["kind"] != "none":
                assert o["phase"] == e["phase"]
    steps = sum(1 for e in want.values() if e["kind"] == "step")
    assert missed <= max(1, steps // 20), f"{log.name}: {missed} of {steps} step lines missed"
    assert summary[0]["new_steps"] + summary[0]["repeated_steps"] == summary[0]["step_lines"]


def test_text_output_has_a_header_a_row_per_line_and_a_summary():
    log = CORPUS / "nanogpt.log"
    r = joules("steps", log)
    assert r.returncode == 0, r.stderr
    rows = r.stdout.splitlines()
    assert rows[0].split() == ["line", "step", "total", "gap", "event", "format", "metrics"]
    body, summary = rows[1:-1], rows[-1]
    assert len(body) == len(log.read_text().splitlines())
    iter10 = body[11].split()  # "iter 10: loss 3.1462, time 13.97ms, mfu 26.69%"
    assert iter10[:6] == ["12", "10", "-", "10", "step", "nanogpt"]
    assert "loss=3.1462" in iter10 and "step_time_s=0.01397" in iter10
    assert "mfu_percent=26.69" in iter10
    assert body[0].split()[:6] == ["1", "-", "-", "-", "-", "-"]
    assert summary.startswith("joules steps: 22 lines, 9 step lines (9 new, 0 repeated, 0 restarts)")
    assert "nanogpt 12" in summary


def test_only_steps_and_standard_input():
    log = CORPUS / "modded_nanogpt.log"
    r = joules("steps", "--only-steps", "-", input=log.read_text())
    assert r.returncode == 0, r.stderr
    rows = r.stdout.splitlines()[1:-1]
    assert rows, r.stdout
    events = {row.split()[4] for row in rows}
    assert "-" not in events and "not-a-step" not in events
    assert {"step", "eval"} <= events
    # No FILE is standard input too.
    r2 = joules("steps", "--only-steps", input=log.read_text())
    assert r2.stdout == r.stdout


def test_repeats_gaps_and_restarts_are_shown():
    text = "iter 10: loss 3.1\niter 20: loss 2.7\niter 20: loss 2.7\niter 0: loss 4.2\n"
    r = joules("steps", "--json", input=text)
    lines, _ = json_lines(r.stdout)
    assert [(o["step"], o["step_gap"], o["counter_restarted"]) for o in lines] == [
        (10, 1, False), (20, 10, False), (20, 0, False), (0, 1, True)]
    t = joules("steps", input=text).stdout.splitlines()
    assert [row.split()[4] for row in t[1:-1]] == ["step", "step", "repeat", "restart"]


def test_spaced_metrics_after_a_step_fraction():
    text = "step 40/100 loss 2.0\nstep 41/100 loss 2.0 lr 1e-4\niter 50/100 loss 1.5\nStep 60/100 loss: 1.2\n"
    r = joules("steps", "--json", input=text)
    lines, _ = json_lines(r.stdout)
    assert [o["metrics"] for o in lines] == [{"loss": 2.0}, {"loss": 2.0, "lr": 1e-4},
                                             {"loss": 1.5}, {"loss": 1.2}]
    assert "loss=2  lr=1e-04" in joules("steps", input=text).stdout


def test_custom_step_regex():
    text = "it 7 of 100 loss=2.5\nsomething else\nit 9 of 100 loss=2.4\n"
    r = joules("steps", "--json", "--step-regex", r"^it (\d+) of (?<total>\d+)", input=text)
    assert r.returncode == 0, r.stderr
    lines, summary = json_lines(r.stdout)
    steps = [o for o in lines if o["kind"] == "step"]
    assert [(o["step"], o["total"], o["step_gap"], o["format"]) for o in steps] == [
        (7, 100, 1, "custom"), (9, 100, 2, "custom")]
    assert steps[0]["metrics"] == {"loss": 2.5}
    assert summary[0]["formats"] == {"custom": 2}


def test_metrics_are_locale_proof_numbers():
    line = "step: 14  loss:  3.24405  memory:  9.46GiB(64.99%)  tps: 7,282  mfu: 0.17%\n"
    r = joules("steps", "--json", input=line, env={"LC_ALL": "de_DE.UTF-8", "LANG": "de_DE.UTF-8"})
    (o,), _ = json_lines(r.stdout)
    assert o["metrics"]["loss"] == 3.24405 and o["metrics"]["tokens_per_s"] == 7282
    assert o["metrics"]["mfu_percent"] == 0.17
    assert o["metrics"]["memory_bytes"] == pytest.approx(9.46 * 2**30)


def test_bad_regex_is_a_usage_error():
    r = joules("steps", "--step-regex", "step (\\d+", input="")
    assert r.returncode == 2
    assert r.stdout == ""
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("joules: error: --step-regex 'step (\\d+'")
    assert "missing closing parenthesis" in err[0]


def test_unreadable_file_is_a_usage_error(tmp):
    r = joules("steps", tmp / "no-such.log")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("joules: error: cannot read ") and "No such file" in r.stderr
    r = joules("steps", tmp)  # a directory
    assert r.returncode == 2 and r.stderr.startswith("joules: error: cannot read ")
    r = joules("steps", "a.log", "b.log")
    assert r.returncode == 2 and "one log" in r.stderr


def test_binary_and_huge_lines_do_not_break_it(tmp):
    p = tmp / "odd.log"
    p.write_bytes(b"\xff\xfe\x00garbage\r\n" + b"x" * 300000 + b"\nstep:5/10 train_loss:1.0\n")
    r = subprocess.run([JOULES, "steps", "--json", str(p)], capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    objs = [json.loads(line) for line in r.stdout.decode().splitlines()]
    assert [o["kind"] for o in objs if o["type"] == "line"] == ["none", "none", "step"]


def test_help_lists_the_options():
    r = joules("steps", "--help")
    assert r.returncode == 0
    for opt in ("--step-regex", "--json", "--only-steps", "FILE"):
        assert opt in r.stdout
    assert "steps" in joules("--help").stdout
