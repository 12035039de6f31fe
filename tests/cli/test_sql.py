"""docs/sql.md's queries, as the page writes them, in DuckDB and in ClickHouse (chDB), against
records joules writes here: two runs, one of them on two hosts.  Their results are checked
against the records themselves.  duckdb and chdb come from build/test-venv (pinned in
scripts/install-deps)."""
import json
import math
import pathlib
import re
import sys

import pytest

from conftest import TRAINER, joules, read_jsonl

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "sql.md"
TEST_VENV = ROOT / "build" / "test-venv"


def engines():
    site = TEST_VENV / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    if site.is_dir() and str(site) not in sys.path:
        sys.path.insert(0, str(site))
    try:
        import chdb
        import duckdb
    except ImportError as e:
        raise AssertionError(f"duckdb or chdb is not importable ({e}) from {site}: run "
                             "scripts/install-deps test") from e
    return duckdb, chdb


def queries():
    """name -> {engine: sql}, from the <!-- test: ENGINE NAME --> blocks of docs/sql.md."""
    out = {}
    for engine, name, sql in re.findall(r"<!-- test: (\w+) (\w+) -->\n```sql\n(.*?)```",
                                        DOC.read_text(), re.S):
        out.setdefault(name, {})[engine] = sql
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("sql")
    (d / "runs").mkdir()
    records = []
    for run_id, region in (("job-a", "DE"), ("job-b", None)):
        path = d / "runs" / f"{run_id}.jsonl"
        extra = ["--region", region] if region else []
        r = joules("wrap", "--backend", "sim", "--sim-gpus", "3", "--output", path, "--quiet",
                   "--run-id", run_id, *extra, "--", TRAINER, "--steps", "25", "--step-ms", "30",
                   "--setup-ms", "100", timeout=120)
        assert r.returncode == 0, r.stderr
        records += read_jsonl(path)
    # job-a ran on two nodes: its second node's file, as that host writes it.
    second = d / "runs" / "job-a-node2.jsonl"
    with open(second, "w") as f:
        for r in [r for r in records if r["run_id"] == "job-a"]:
            r = dict(r, hostname="node2")
            f.write(json.dumps(r) + "\n")
            records.append(r)
    return d, records


def run(engine, sql, cwd, monkeypatch):
    duckdb, chdb = engines()
    monkeypatch.chdir(cwd)
    if engine == "duckdb":
        return [tuple(row) for row in duckdb.sql(sql).fetchall()]
    text = str(chdb.query(sql, "JSONCompactEachRow"))
    return [tuple(json.loads(line)) for line in text.splitlines() if line.strip()]


def test_the_page_has_every_query_for_both_engines():
    q = queries()
    assert set(q) == {"energy_per_job_day", "j_per_step_trend", "stragglers"}
    for name, by_engine in q.items():
        assert set(by_engine) == {"duckdb", "chdb"}, name


@pytest.mark.parametrize("engine", ["duckdb", "chdb"])
def test_energy_per_job_per_day(runs, engine, monkeypatch):
    d, records = runs
    rows = run(engine, queries()["energy_per_job_day"][engine], d, monkeypatch)
    ends = [r for r in records if r["type"] == "session_end"]
    assert [r[0] for r in rows] == ["job-a", "job-b"]
    for job, day, nodes, kwh, co2 in rows:
        mine = [r for r in ends if r["run_id"] == job]
        assert str(day) == mine[0]["start_time"][:10]
        assert nodes == len(mine) == (2 if job == "job-a" else 1)
        assert kwh == pytest.approx(round(sum(r["energy_j"] for r in mine) / 3.6e6, 6), abs=1e-6)
        want = [r["carbon"]["co2e_g"] for r in mine if r["carbon"]["co2e_g"] is not None]
        if want:
            assert co2 == pytest.approx(round(sum(want), 3), abs=1e-3)
        else:
            assert co2 in (None, 0)


@pytest.mark.parametrize("engine", ["duckdb", "chdb"])
def test_energy_per_step_trend(runs, engine, monkeypatch):
    d, records = runs
    rows = run(engine, queries()["j_per_step_trend"][engine], d, monkeypatch)
    steps = [r for r in records if r["type"] == "step"]
    want = {}
    for r in steps:
        k = (r["run_id"], (r["step"] - 1) // 10 * 10 + 1)
        e, n, t = want.get(k, (0.0, 0, 0.0))
        want[k] = (e + r["energy_j"], n + r["step_gap"], t + r["duration_s"])
    assert [(r[0], r[1]) for r in rows] == sorted(want)
    for run_id, from_step, j, s in rows:
        e, n, t = want[(run_id, from_step)]
        assert j == pytest.approx(round(e / n, 3), abs=2e-3)
        assert s == pytest.approx(round(t / n, 4), abs=2e-4)


@pytest.mark.parametrize("engine", ["duckdb", "chdb"])
def test_stragglers(runs, engine, monkeypatch):
    d, records = runs
    rows = run(engine, queries()["stragglers"][engine], d, monkeypatch)
    want = {}
    for r in records:
        if r["type"] != "step":
            continue
        for g in r["gpus"]:
            want.setdefault((r["run_id"], r["hostname"], g["index"]), []).append(g["deviation"])
    assert [r[:3] for r in rows] == sorted(want)
    for run_id, host, gpu, mean, n in rows:
        devs = want[(run_id, host, gpu)]
        assert n == len(devs)
        assert mean == pytest.approx(round(sum(devs) / len(devs), 4), abs=2e-4)
