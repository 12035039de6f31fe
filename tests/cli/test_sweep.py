"""`joules sweep` against the fake NVML: one run per limit, energy and time per step against the
workload curve, the Pareto front and its knee, JSON and SVG, the limits set back after every
run, and what it refuses."""
import json
import xml.etree.ElementTree as ET

import pytest

import tune_curves as curves
from conftest import joules, read_jsonl, words
from tune_util import ORIGINAL_MW, journals, limits, trainer, tune_env, uuid

STEP_S = 0.05


def pareto_and_knee(points):
    """The front and knee as docs/tuning.md defines them, from (limit, J, s) tuples."""
    order = sorted(points, key=lambda p: (p[2], p[1], -p[0]))
    front = []
    for p in order:
        if not front or p[1] < front[-1][1]:
            front.append(p)
    knee = None
    if len(front) >= 3:
        (_, e0, t0), (_, e1, t1) = front[0], front[-1]
        gaps = [(1 - (p[2] - t0) / (t1 - t0) - (p[1] - e1) / (e0 - e1), p) for p in front[1:-1]]
        best = max(gaps)
        knee = best[1][0] if best[0] > 1e-9 else None
    return [p[0] for p in front], knee


def test_a_sweep_measures_each_limit_and_finds_the_front_and_knee(tmp):
    env = tune_env(tmp, [curves.device("tradeoff")])
    svg = tmp / "sweep.svg"
    out = tmp / "runs.jsonl"
    r = joules("sweep", "--limits", "600:200:100", "--steps", "6", "--warmup-steps", "2", "--json",
               "--svg", svg, "--output", out, "--no-inline", "--",
               *trainer(env, 1000, STEP_S * 1000), env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout.splitlines()[-1])  # after the command's own output
    assert result["unit"] == "step" and result["complete"] is True
    got = [(p["limit_w"], p["energy_per_step_j"], p["seconds_per_step"]) for p in result["points"]]
    assert [w for w, _, _ in got] == [600, 500, 400, 300, 200]
    for (w, e, t) in got:
        want_e, want_t = curves.point("tradeoff", w, STEP_S)
        assert e == pytest.approx(want_e, rel=0.06), (w, e, want_e)
        assert t == pytest.approx(want_t, rel=0.06), (w, t, want_t)
        assert 6 <= next(p["steps"] for p in result["points"] if p["limit_w"] == w) <= 7
    # Every limit trades time for energy on this curve: all on the front, the knee inside it.
    front, knee = pareto_and_knee(got)
    assert [p["limit_w"] for p in result["points"] if p["pareto"]] == sorted(front, reverse=True)
    assert sorted(front) == [200, 300, 400, 500, 600]
    assert result["knee_limit_w"] == knee and knee in (500, 400, 300)  # inside the front
    # The picture: a standalone SVG with a dot per limit and the knee ringed.
    root = ET.parse(svg).getroot()
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "knee" in texts and "600 W" in texts and "200 W" in texts
    # One run per limit, each ended by sweep, its records labelled with its limit.
    starts = [x for x in read_jsonl(out) if x["type"] == "session_start"]
    assert [x["labels"]["power_limit_w"] for x in starts] == ["600", "500", "400", "300", "200"]
    assert limits(env) == {uuid(0): ORIGINAL_MW} and journals(env) == []


def test_without_steps_each_run_goes_to_its_end_and_the_table_says_per_step(tmp):
    env = tune_env(tmp, [curves.device("memory450")])
    r = joules("sweep", "--limits", "450,350", "--no-inline", "--", *trainer(env, 12, 30),
               env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    lines = lines[next(i for i, line in enumerate(lines) if line.startswith("joules sweep:")):]
    assert lines[0].startswith("joules sweep: GPU 0 (1x NVIDIA H100 80GB HBM3), per step after 3 "
                               "warm-up steps"), lines
    assert "J/step" in lines[1] and "s/step" in lines[1]
    rows = {line.split()[0]: line for line in lines[2:4]}
    assert set(rows) == {"450", "350"} and "front" in rows["450"] and "front" in rows["350"]
    # 350 W: the workload's steps 12 % longer, its energy per step a little lower.
    cells = rows["350"].split()
    assert cells[8] == "%" and float(cells[7]) == pytest.approx(12.0, abs=4.0), rows["350"]
    assert limits(env) == {uuid(0): ORIGINAL_MW} and journals(env) == []


def test_a_command_that_fails_stops_the_sweep_with_its_status(tmp):
    env = tune_env(tmp, [curves.device("knee350")])
    r = joules("sweep", "--limits", "500,400", "--", "sh", "-c", "echo step 1/2; exit 7", env=env)
    assert r.returncode == 7
    assert "the command ended with status 7 at 500 W: the sweep stops there" in r.stderr
    assert limits(env) == {uuid(0): ORIGINAL_MW} and journals(env) == []


def test_refusals_before_anything_runs(tmp):
    marker = tmp / "ran"
    env = tune_env(tmp, [curves.device("knee350", limits={"settable": False})])
    r = joules("sweep", "--limits", "500", "--", "touch", marker, env=env)
    assert r.returncode == 125 and "cannot sweep" in r.stderr and "CAP_SYS_ADMIN" in r.stderr
    assert not marker.exists() and journals(env) == []
    r = joules("sweep", "--limits", "500:100:100", "--", "touch", marker, env=env)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1
    assert "100 W is below GPU 0's minimum of 200 W" in r.stderr
    r = joules("sweep", "--", "touch", marker, env=env)
    assert r.returncode == 2 and "--limits" in r.stderr
    r = joules("sweep", "--limits", "500", "--svg", "/nonexistent/x.svg", "--", "touch", marker,
               env=env)
    assert r.returncode == 2 and "--svg '/nonexistent/x.svg'" in r.stderr
    sim = joules("sweep", "--backend", "sim", "--limits", "500", "--", "touch", marker)
    assert sim.returncode == 125 and "simulated GPUs have no power limit" in sim.stderr
    dry = joules("sweep", "--dry-run", "--backend", "sim", "--limits", "500", "--", "touch", marker)
    assert dry.returncode == 0 and "simulated GPUs have no power limit" in words(dry.stdout)
    assert not marker.exists()
