"""joules.measure, joules.step, joules.Tracker, joules.read and the IPython magic, on the fake
NVML: each number held to the scenario's truth."""
from __future__ import annotations

import io
import json
import subprocess
import sys
import time

import pytest

import joules
from fake_gpus import SHORT_WINDOW_REL, constant, h100, run_python, venv_env


def test_measure_as_a_block_and_its_summary_line(gpus, capsys):
    gpus({"devices": [h100(constant(300)), h100(constant(500))]})
    with joules.Monitor(cpu=False):
        with joules.measure("eval\x1b[2J", print=True) as m:
            time.sleep(0.3)
        assert m.result is not None and m.result.final
        assert m.total_energy == pytest.approx(800 * m.time, rel=SHORT_WINDOW_REL)
        assert m.name == "eval\x1b[2J"
    err = capsys.readouterr().err
    # The name came from outside joules: printed escaped, never as a live escape sequence.
    assert "\x1b" not in err
    assert err.startswith("joules: 'eval\\x1b[2J': ")
    assert "2 GPUs, counter" in err and err.endswith("\n") and err.count("\n") == 1


def test_measure_as_a_decorator_recursively_and_in_threads(gpus):
    import threading

    gpus({"devices": [h100(constant(200))]})
    with joules.Monitor(cpu=False):

        @joules.measure
        def work(depth: int) -> int:
            time.sleep(0.05)
            return 1 if depth == 0 else 1 + work(depth - 1)

        assert work(2) == 3
        outer = work.last_measurement
        assert outer.name.endswith("work")
        assert outer.gpu_energy[0] == pytest.approx(200 * outer.time, rel=SHORT_WINDOW_REL)
        assert outer.time >= 0.15

        @joules.measure("named", print=False)
        def other() -> None:
            time.sleep(0.05)

        threads = [threading.Thread(target=other) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert other.last_measurement.name == "named"


def test_measure_without_a_monitor_opens_one_for_the_job(gpus):
    gpus({"devices": [h100(constant(150))]})
    r = run_python("import joules, time\n"
                   "with joules.measure('block') as m:\n"
                   "    time.sleep(0.2)\n"
                   "print(m.gpu_energy[0] / m.time)\n")
    assert r.returncode == 0, r.stderr
    assert float(r.stdout) == pytest.approx(150, rel=SHORT_WINDOW_REL)


def test_steps_feed_the_current_monitor_and_cover_it_without_gaps(gpus):
    gpus({"devices": [h100(constant(400))]})
    with joules.Monitor(cpu=False) as monitor:
        steps = []
        for k in range(5):
            time.sleep(0.1 * (k + 1))
            steps.append(joules.step(tokens=1000 * (k + 1)))
        totals = monitor.totals()
        durations = [s.time for s in steps]
        for s, slept in zip(durations, [0.1, 0.2, 0.3, 0.4, 0.5]):
            assert s >= slept - 0.001  # a step lasts at least its sleep (longer on a busy machine)
        for s in steps:
            assert s.total_energy == pytest.approx(400 * s.time, rel=SHORT_WINDOW_REL)
        # Consecutive steps: together they are the monitor's time from its opening to the last.
        assert sum(durations) <= totals.time + 1e-6


def test_step_under_joules_wrap_tells_wrap_the_boundaries(tmp_path):
    # No log line names a step here: wrap learns the steps from joules.step alone.
    script = tmp_path / "train.py"
    script.write_text("import joules, time\n"
                      "assert joules.wrapped()\n"
                      "for k in range(4):\n"
                      "    time.sleep(0.1)\n"
                      "    joules.step(tokens=512)\n")
    out = tmp_path / "run.jsonl"
    r = subprocess.run(["joules", "wrap", "--backend", "sim", "--output", str(out), "--",
                        sys.executable, str(script)], env=venv_env(), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    steps = joules.read(out, type="step", frame=False)
    # As with step lines, the first boundary closes `setup` (step 1's work is in it) and each
    # later one closes a step window.
    assert [s["step"] for s in steps] == [2, 3, 4], steps
    assert [s["tokens"] for s in steps] == [512] * 3
    for s in steps:
        assert s["joules_per_token"] == pytest.approx(s["energy_j"] / 512)


def test_step_outside_wrap_and_without_a_monitor_is_not_an_error(gpus):
    gpus({"devices": [h100(constant(100))]})
    r = run_python("import joules, time\n"
                   "assert not joules.wrapped()\n"
                   "time.sleep(0.1)\n"
                   "m = joules.step(tokens=10)\n"
                   "print(m.total_energy > 0)\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True"


def test_tracker_predicts_the_run_from_its_first_epoch(gpus, tmp_path):
    watts = 350.0
    gpus({"devices": [h100(constant(watts)) for _ in range(2)]})
    stream = io.StringIO()
    with joules.Monitor(cpu=False):
        t0 = time.monotonic()
        tracker = joules.Tracker(epochs=4, epochs_before_pred=1, carbon_intensity=400,
                                 pue=1.2, price_per_kwh=0.3, log_dir=str(tmp_path),
                                 stream=stream)
        for _ in range(4):
            tracker.epoch_start()
            time.sleep(0.25)
            tracker.epoch_end()
        tracker.stop()
        t1 = time.monotonic()
    p = tracker.predictions[0]
    assert p.at_epoch == 1 and p.epochs == 4
    # The truth: the GPUs draw 2 x 350 W for the whole run.
    for m in tracker.epoch_measurements:
        assert m.total_energy == pytest.approx(2 * watts * m.time, rel=SHORT_WINDOW_REL)
    actual = tracker.result["energy_j"]
    assert tracker.result["duration_s"] <= t1 - t0
    assert actual == pytest.approx(2 * watts * tracker.result["duration_s"], rel=0.005)
    # Predicted after one epoch, for four: within a few percent of what the run then took.
    assert p.duration_s == pytest.approx(tracker.result["duration_s"], rel=0.05)
    assert p.energy_j == pytest.approx(actual, rel=0.05)
    assert p.energy_j == pytest.approx(2 * watts * p.duration_s, rel=SHORT_WINDOW_REL)
    assert p.co2e_g == pytest.approx(p.energy_j / 3.6e6 * 1.2 * 400)
    assert p.cost == pytest.approx(p.energy_j / 3.6e6 * 1.2 * 0.3)
    text = stream.getvalue()
    assert "joules: predicted for 4 epoch(s): " in text
    assert "joules: actual for 4 epoch(s): " in text
    records = joules.read(next(tmp_path.glob("joules-tracker-*.jsonl")), frame=False)
    assert [r["type"] for r in records] == ["epoch", "prediction", "epoch", "epoch", "epoch",
                                            "tracker_end"]
    assert all(r["schema_version"] == 1 and r["hostname"] for r in records)
    assert records[1]["energy_j"] == pytest.approx(p.energy_j)
    assert records[-1]["energy_j"] == pytest.approx(actual)


def test_tracker_stops_the_run_when_the_prediction_passes_the_budget(gpus):
    gpus({"devices": [h100(constant(500))]})
    stream = io.StringIO()
    with joules.Monitor(cpu=False):
        tracker = joules.Tracker(epochs=100, budget_energy_j=500.0, on_budget="stop",
                                 stream=stream)
        tracker.epoch_start()
        time.sleep(0.2)
        # The prediction comes at the first epoch edge at which the epoch's numbers are final:
        # this epoch's end, or the next one's start.
        with pytest.raises(joules.BudgetExceeded) as e:
            tracker.epoch_end()
            tracker.epoch_measurements[0].wait()
            tracker.epoch_start()
    assert e.value.budget == "energy_j"
    assert e.value.prediction.energy_j > 500 * 0.2 * 99
    assert tracker.stopped and tracker.over_budget == "energy_j"
    assert "stopping" in stream.getvalue()


def test_read_gives_dicts_without_pandas(tmp_path):
    out = tmp_path / "run.jsonl"
    r = subprocess.run(["joules", "run", "--backend", "sim", "--output", str(out), "--",
                        "sleep", "0.2"], env=venv_env(), capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    records = joules.read(out)
    try:
        import pandas  # noqa: F401
        has_pandas = True
    except ImportError:
        has_pandas = False
    if has_pandas:
        types = list(records["type"])
    else:
        types = [x["type"] for x in records]
    # A run's records: its start, the power samples a file gets by default, its end.
    assert types[0] == "session_start" and types[-1] == "session_end"
    assert set(types[1:-1]) <= {"sample"}
    if not has_pandas:
        with pytest.raises(ImportError):
            joules.read(out, frame=True)
    ends = joules.read(out, type="session_end", frame=False)
    assert len(ends) == 1 and ends[0]["method"] == "simulated"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"type": "x"}) + "\nnot json\n")
    with pytest.raises(ValueError, match="bad.jsonl:2"):
        joules.read(bad)


def test_the_ipython_cell_magic(gpus):
    pytest.importorskip("IPython")
    gpus({"devices": [h100(constant(250))]})
    r = run_python(
        "from IPython.testing.globalipapp import start_ipython\n"
        "ip = start_ipython()\n"
        "ip.run_line_magic('load_ext', 'joules')\n"
        "ip.run_cell_magic('joules', 'sleepy', 'import time\\ntime.sleep(0.2)\\nx = 41 + 1')\n"
        "m = ip.user_ns['_joules']\n"
        "print('RESULT', ip.user_ns['x'], m.name, m.total_energy / m.time)\n")
    assert r.returncode == 0, r.stderr
    assert "joules: 'sleepy': " in r.stdout
    result = [line.split() for line in r.stdout.splitlines() if line.startswith("RESULT")]
    assert len(result) == 1 and result[0][1:3] == ["42", "sleepy"], r.stdout
    assert float(result[0][3]) == pytest.approx(250, rel=SHORT_WINDOW_REL)
