"""joules report, diff and aggregate as a user runs them: the report's numbers against the records
they come from, sample records, bad input (a crash's cut-off line, a newer joules' records,
empty files, files that are not JSONL, other hosts), escaping, the atomic write, the diff gate
and aggregate's totals.  The records come from joules wrap on the simulated backend."""
import html.parser
import json
import math
import os
import pathlib
import shutil

import pytest

from conftest import JOULES, TRAINER, joules, read_jsonl

SCRIPT_LABEL = "<script>alert(1)</script>"


def wrap_run(path, *extra, steps=24, run_id=None):
    args = ["wrap", "--backend", "sim", "--sim-gpus", "4", "--output", path, "--quiet",
            "--samples-interval", "100", "--region", "DE", "--price-per-kwh", "0.25",
            "--currency", "EUR", "--tokens-per-step", "4096", "--total-steps", str(steps),
            "--predict-after", "3", "--label", f"note={SCRIPT_LABEL}", *extra]
    if run_id:
        args += ["--run-id", run_id]
    # Setup outlasts the simulated GPUs' 1 s start-up, so that the steps draw steady power and
    # their spread is the run-to-run noise diff measures (docs/sim-backend.md).
    r = joules(*args, "--", TRAINER, "--steps", str(steps), "--step-ms", "40", "--setup-ms",
               "1000", "--eval-every", "8", "--eval-ms", "120", timeout=120)
    assert r.returncode == 0, r.stderr
    return read_jsonl(path)


@pytest.fixture(scope="module")
def run_a(tmp_path_factory):
    d = tmp_path_factory.mktemp("a")
    path = d / "a.jsonl"
    return path, wrap_run(path, run_id="run-a")


class Figures(html.parser.HTMLParser):
    """The machine-readable numbers of the page: cards, phase rows and device rows."""

    def __init__(self):
        super().__init__()
        self.cards, self.phases, self.devices = {}, {}, {}
        self.tags = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        num = lambda v: float(v) if v not in (None, "") else None  # noqa: E731
        if "data-figure" in a:
            self.cards[a["data-figure"]] = num(a.get("data-value"))
        if "data-phase" in a:
            self.phases[a["data-phase"]] = num(a["data-energy-j"])
        if "data-device" in a:
            self.devices[a["data-device"]] = num(a["data-energy-j"])


def figures_of(page):
    f = Figures()
    f.feed(page)
    return f


def by_type(records, kind):
    return [r for r in records if r["type"] == kind]


def test_report_numbers_are_the_records_numbers(run_a, tmp):
    path, records = run_a
    out = tmp / "a.html"
    r = joules("report", path, "-o", out)
    assert r.returncode == 0, r.stderr
    f = figures_of(out.read_text())
    end = by_type(records, "session_end")[0]
    w = end["wrap"]
    assert f.cards["energy_j"] == pytest.approx(end["energy_j"], rel=1e-12)
    assert f.cards["duration_s"] == pytest.approx(end["duration_s"], rel=1e-12)
    assert f.cards["co2e_g"] == pytest.approx(end["carbon"]["co2e_g"], rel=1e-12)
    assert f.cards["cost"] == pytest.approx(end["carbon"]["cost"], rel=1e-12)
    assert f.cards["energy_per_step_j"] == pytest.approx(w["energy_per_step_j"], rel=1e-12)
    assert f.cards["energy_per_token_j"] == pytest.approx(w["joules_per_token"], rel=1e-12)
    assert f.cards["avg_power_w"] == pytest.approx(end["energy_j"] / end["duration_s"], rel=1e-12)
    assert f.cards["peak_power_w"] == pytest.approx(end["peak_power_w"], rel=1e-12)
    # Energy by phase: the step and phase windows summed by kind, and all of them the total.
    sums = {}
    for rec in records:
        if rec["type"] in ("step", "phase"):
            k = "steps" if rec["type"] == "step" else rec["phase"]
            sums[k] = sums.get(k, 0.0) + rec["energy_j"]
    assert set(f.phases) == set(sums)
    for k, v in sums.items():
        assert f.phases[k] == pytest.approx(v, rel=1e-9), k
    assert sum(f.phases.values()) == pytest.approx(end["energy_j"], rel=1e-9)
    for d in end["devices"]:
        assert f.devices[f"GPU {d['index']}"] == pytest.approx(d["energy_j"], rel=1e-12)


def test_report_has_every_section_and_escapes_outside_strings(run_a, tmp):
    path, _ = run_a
    out = tmp / "a.html"
    assert joules("report", path, "-o", out, "-q").returncode == 0
    page = out.read_text()
    for section in ("Headline", "Power over time", "Energy per step", "Stragglers",
                    "Energy by phase", "Prediction against the actual", "Devices",
                    "Health events"):
        assert f"<h3>{section}</h3>" in page, section
    assert SCRIPT_LABEL not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    # Self-contained: nothing fetched from anywhere.
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page and "src=" not in page


def test_sample_records_are_contiguous_buckets_that_add_up(run_a):
    _, records = run_a
    start = by_type(records, "session_start")[0]
    end = by_type(records, "session_end")[0]
    samples = by_type(records, "sample")
    assert start["samples_interval_ms"] == 100
    assert len(samples) >= 10
    for prev, cur in zip(samples, samples[1:]):
        assert cur["bucket"] == prev["bucket"] + 1
        assert cur["start_monotonic_s"] == pytest.approx(prev["end_monotonic_s"], abs=1e-9)
    assert samples[0]["start_monotonic_s"] == pytest.approx(start["start_monotonic_s"], abs=1e-9)
    assert samples[-1]["end_monotonic_s"] <= end["end_monotonic_s"] + 1e-9
    for s in samples:
        assert len(s["devices"]) == 4
        for d in s["devices"]:
            p = d["power_w"]
            # The mean is the energy over the bucket's time; min and max are instant readings.
            assert 0 < p["min"] <= p["max"] and p["mean"] > 0
            assert d["gpu_util_percent"] is None or 0 <= d["gpu_util_percent"]["mean"] <= 100
    # The buckets' energies are the readings' own differences: close to the run's total.
    total = sum(s["energy_j"] or 0.0 for s in samples)
    assert total == pytest.approx(end["energy_j"], rel=0.05)


def test_sample_buckets_widen_as_the_run_grows():
    """The decimation rule of record/sample_records.hpp, from the widths a long run would use:
    at 100 ms, 1000 buckets of 0.1 s, then 500 of 0.2 s, ... and about 5900 records in 24 h."""
    base, per = 0.1, 1000
    t, n, widths = 0.0, 0, set()
    while t < 86400.0:
        w = base
        while t >= per * w:
            w *= 2
        widths.add(round(w, 6))
        t += w
        n += 1
    assert 5500 < n < 6200
    assert max(widths) <= 2 * 86400.0 / per


def test_samples_are_on_by_default_for_a_file_and_off_with_no_samples(tmp):
    a, b = tmp / "on.jsonl", tmp / "off.jsonl"
    for path, extra in ((a, []), (b, ["--no-samples"])):
        r = joules("run", "--backend", "sim", "--sim-gpus", "1", "--output", path, "-q", *extra,
                   "--", "sleep", "1.2")
        assert r.returncode == 0, r.stderr
    on, off = read_jsonl(a), read_jsonl(b)
    assert by_type(on, "session_start")[0]["samples_interval_ms"] == 1000
    assert len(by_type(on, "sample")) >= 1
    assert by_type(off, "session_start")[0]["samples_interval_ms"] is None
    assert not by_type(off, "sample")
    r = joules("run", "--samples-interval", "5", "--", "true")
    assert r.returncode == 2 and "--samples-interval '5'" in r.stderr
    r = joules("run", "--samples-interval", "100", "--no-samples", "--", "true")
    assert r.returncode == 2 and r.stderr.count("\n") == 1


def one_error_line(r):
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("joules: error: ")
    assert "Traceback" not in r.stderr and not r.stdout


def test_bad_input_is_one_line_and_never_replaces_a_good_report(run_a, tmp):
    path, _ = run_a
    out = tmp / "keep.html"
    assert joules("report", path, "-o", out, "-q").returncode == 0
    good = out.read_bytes()
    empty = tmp / "empty.jsonl"
    empty.write_text("")
    not_jsonl = tmp / "notes.txt"
    not_jsonl.write_text("hello\nworld\n")
    for bad in (empty, not_jsonl, tmp / "missing.jsonl"):
        r = joules("report", bad, "-o", out)
        one_error_line(r)
        assert str(bad) in r.stderr
        assert out.read_bytes() == good
    r = joules("report", not_jsonl)
    assert f"{not_jsonl}:1:" in r.stderr
    # Nothing left behind from the attempts.
    assert sorted(p.name for p in tmp.iterdir()) == ["empty.jsonl", "keep.html", "notes.txt"]
    one_error_line(joules("report"))
    one_error_line(joules("report", path, "-o", tmp / "no-such-dir" / "x.html"))


def test_cut_off_and_newer_records_are_read_with_warnings(run_a, tmp):
    path, records = run_a
    lines = path.read_text().splitlines(keepends=True)
    cut = tmp / "cut.jsonl"
    # A crash: session_end missing, the last line cut in the middle; plus a newer joules' record.
    body = [l for l in lines if '"type":"session_end"' not in l]
    newer = json.dumps({"type": "gpu_topology", "schema_version": 2, "time": "x", "run_id": "run-a",
                        "hostname": "h", "labels": {}})
    cut.write_text("".join(body[:5]) + newer + "\n" + "".join(body[5:]) + body[-1][:40])
    out = tmp / "cut.html"
    r = joules("report", cut, "-o", out)
    assert r.returncode == 0, r.stderr
    assert f"{cut}:{len(body) + 2}: the last line is cut off" in r.stderr
    assert f"{cut}:6: record type 'gpu_topology' is unknown" in r.stderr
    assert "schema version 2" in r.stderr
    page = out.read_text()
    assert "no session_end record" in page
    f = figures_of(page)
    windows = sum(x["energy_j"] for x in records if x["type"] in ("step", "phase"))
    assert f.cards["energy_j"] == pytest.approx(windows, rel=1e-9)


def node_copy(records, path, host, run_id=None, scale=1.0):
    """The records as another host (or run) would have written them, energies times `scale`."""
    with open(path, "w") as f:
        for r in records:
            r = json.loads(json.dumps(r))
            r["hostname"] = host
            if run_id:
                r["run_id"] = run_id
            for k in ("energy_j", "energy_per_step_j", "joules_per_token"):
                if isinstance(r.get(k), (int, float)):
                    r[k] *= scale
            if r["type"] == "session_end":
                r["wrap"]["energy_per_step_j"] *= scale
                r["wrap"]["joules_per_token"] *= scale
                for d in r["devices"]:
                    d["energy_j"] *= scale
            for g in r.get("gpus", []):
                g["energy_j"] *= scale
            f.write(json.dumps(r) + "\n")


def test_nodes_of_one_job_are_one_run(run_a, tmp):
    path, records = run_a
    b = tmp / "node-b.jsonl"
    node_copy(records, b, "node-b")
    end = by_type(records, "session_end")[0]
    out = tmp / "job.html"
    r = joules("report", path, b, "-o", out, "-q")
    assert r.returncode == 0, r.stderr
    f = figures_of(out.read_text())
    assert f.cards["energy_j"] == pytest.approx(2 * end["energy_j"], rel=1e-12)
    assert len(f.devices) == 8
    r = joules("aggregate", "--by", "host", "--format", "json", path, b)
    assert r.returncode == 0, r.stderr
    agg = json.loads(r.stdout)
    assert agg["total"]["runs"] == 1 and agg["total"]["nodes"] == 2
    assert [g["host"] for g in agg["groups"]] == sorted([end["hostname"], "node-b"])
    assert agg["total"]["energy_j"] == pytest.approx(2 * end["energy_j"], rel=1e-12)


def test_aggregate_adds_up_many_runs_with_provenance(run_a, tmp):
    path, records = run_a
    end = by_type(records, "session_end")[0]
    files = []
    for i in range(5):
        p = tmp / f"r{i}.jsonl"
        node_copy(records, p, end["hostname"], run_id=f"r{i}", scale=1.0 + i / 10)
        files.append(p)
    (tmp / "empty.jsonl").write_text("")
    r = joules("aggregate", "--format", "json", *files, tmp / "empty.jsonl")
    assert r.returncode == 0, r.stderr
    assert "empty.jsonl: empty, skipped" in r.stderr
    t = json.loads(r.stdout)["total"]
    assert t["runs"] == 5
    assert t["energy_j"] == pytest.approx(sum(end["energy_j"] * (1 + i / 10) for i in range(5)))
    assert t["co2e_nodes"] == 5 and t["methods"] == ["simulated"]
    assert t["co2e_sources"] and "DE" in t["co2e_sources"][0]
    csv = joules("aggregate", "--by", "day,user", "--format", "csv", *files).stdout.splitlines()
    assert csv[0].startswith("day,user,runs,nodes,")
    assert csv[-1].startswith("total,,5,5,")
    table = joules("aggregate", "--by", "job", *files)
    assert table.returncode == 0 and len(table.stdout.splitlines()) == 7
    one_error_line(joules("aggregate", "--by", "month", *files))
    one_error_line(joules("aggregate", "--format", "xml", *files))


def test_diff_holds_changes_against_noise_and_gates(run_a, tmp):
    path, records = run_a
    worse = tmp / "worse.jsonl"
    node_copy(records, worse, by_type(records, "session_end")[0]["hostname"], run_id="b",
              scale=1.2)
    r = joules("diff", "--json", path, path)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    rows = {(x["section"], x["name"]): x for x in d["rows"]}
    assert rows[("run", "energy")]["change"] == 0
    assert rows[("run", "energy per step")]["exceeds_noise"] is False
    assert d["gate"]["name"] == "energy per token"
    r = joules("diff", "--json", "--fail-if-worse", "5", path, worse)
    assert r.returncode == 1, r.stderr
    d = json.loads(r.stdout)
    rows = {(x["section"], x["name"]): x for x in d["rows"]}
    assert rows[("run", "energy")]["change"] == pytest.approx(0.2, rel=1e-9)
    assert rows[("run", "energy per token")]["change"] == pytest.approx(0.2, rel=1e-9)
    per_step = rows[("run", "energy per step")]
    # The noise is the spread of the steps' energies, which a loaded machine widens: +20 % exceeds
    # it exactly when it is under 0.2, and changes well above and well below it are judged so.
    assert per_step["exceeds_noise"] is (per_step["noise"] < 0.2)
    for scale, exceeds in ((1 + 3 * per_step["noise"], True), (1 + per_step["noise"] / 3, False)):
        other = tmp / f"x{scale}.jsonl"
        node_copy(records, other, "node-x", run_id="x", scale=scale)
        x = json.loads(joules("diff", "--json", path, other).stdout)
        x_rows = {(r["section"], r["name"]): r for r in x["rows"]}
        assert x_rows[("run", "energy per step")]["exceeds_noise"] is exceeds, (scale, x_rows)
    assert rows[("gpu", "GPU 0")]["change"] == pytest.approx(0.2, rel=1e-9)
    assert d["gate"]["failed"] is True
    text = joules("diff", "--fail-if-worse", "50", path, worse)
    assert text.returncode == 0 and "gate: energy per token changed +20.0 %" in text.stdout
    assert "passed" in text.stdout
    one_error_line(joules("diff", path))
    one_error_line(joules("diff", "--fail-if-worse", "-3", path, worse))


def test_pdf_without_chromium_is_one_line_and_writes_nothing(run_a, tmp):
    path, _ = run_a
    r = joules("report", path, "--pdf", tmp / "a.pdf", env={"JOULES_CHROMIUM": "/nonexistent"})
    one_error_line(r)
    assert "Chromium" in r.stderr
    assert list(tmp.iterdir()) == []


def test_help_man_page_and_completion_know_the_subcommands():
    for cmd in ("report", "diff", "aggregate"):
        r = joules(cmd, "--help")
        assert r.returncode == 0 and f"joules {cmd}" in r.stdout
    assert "joules\\-report (1)" in joules("manpage").stdout
    assert "fail\\-if\\-worse" in joules("manpage", "diff").stdout
    assert "samples\\-interval" in joules("manpage", "wrap").stdout
    comp = joules("completion", "bash").stdout
    for cmd in ("report", "diff", "aggregate"):
        assert f"    {cmd}) opts=" in comp
        assert comp.split(f"    {cmd}) opts=", 1)[1].split("\n", 1)[0].endswith(
            "rest='compgen -f -- \"$cur\"' ;;")
    assert '"aggregate --format") COMPREPLY=($(compgen -W "table csv json"' in comp
