"""`joules wrap` as a user sees it, on the simulated backend."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import JOULES, TRAINER, joules, read_jsonl, records_of

# A constant draw, so that the energy of every window is known exactly: 2 GPUs x (70 + 630 u) W.
SIM = ["--backend", "sim", "--sim-profile", "0.5", "--sim-gpus", "2"]
POWER_W = 2 * (70.0 + 630.0 * 0.5)


def test_output_passes_through_byte_for_byte(tmp):
    payload = (b"plain line\n"
               b"\x1b[32mcolour\x1b[0m\n"
               b"progress  10%\rprogress  50%\rprogress 100%\n"
               b"invalid utf-8 \xff\xfe\xc3(\n"
               b"no newline at the end" + b"x" * 100000)
    src = tmp / "payload.bin"
    src.write_bytes(payload)
    for mode in (["--no-pty"], []):
        r = subprocess.run([JOULES, "wrap", *SIM, "-q", "--no-inline", *mode, "--", "cat", str(src)],
                           capture_output=True, timeout=30)
        assert r.returncode == 0, r.stderr
        assert r.stdout == payload, mode


def test_stderr_stays_on_stderr():
    r = joules("wrap", *SIM, "-q", "--", "sh", "-c", "echo out; echo err >&2")
    assert r.stdout == "out\n" and r.stderr == "err\n"


def test_every_joule_lands_in_exactly_one_window(tmp):
    out = tmp / "run.jsonl"
    r = joules("wrap", *SIM, "--output", out, "--", TRAINER, "--steps", "20", "--step-ms", "50",
               "--setup-ms", "200", "--eval-every", "5", "--eval-ms", "100")
    assert r.returncode == 0, r.stderr
    records = read_jsonl(out)
    end = records[-1]
    assert end["type"] == "session_end"
    steps = [x for x in records if x["type"] == "step"]
    phases = [x for x in records if x["type"] == "phase"]
    # Step 1's line closes the setup window; steps 2..20 have windows of their own.
    assert [s["step"] for s in steps] == list(range(2, 21))
    assert {p["phase"] for p in phases} >= {"setup", "tail"}
    total = sum(x["energy_j"] for x in steps + phases)
    assert total == pytest.approx(end["energy_j"], abs=1e-5)
    w = end["wrap"]
    assert w["conserved"] is True
    assert w["steps"] == 19
    parts = w["energy_by_window_j"]
    assert (parts["setup"] + parts["steps"] + sum(parts["phases"].values()) + parts["other"] +
            parts["tail"]) == pytest.approx(end["energy_j"], abs=1e-5)
    # Windows tile the run: each starts where the previous ended.
    windows = sorted(steps + phases, key=lambda x: x["window"])
    for a, b in zip(windows, windows[1:]):
        assert b["start_monotonic_s"] == a["end_monotonic_s"]
    # Constant power: each window's energy is its duration times the power.
    for x in windows:
        assert x["energy_j"] == pytest.approx(POWER_W * x["duration_s"], abs=0.05)


def test_c_child_step_times_come_from_a_pseudo_terminal(tmp):
    """A C program block-buffers stdout on a pipe; on joules' pty it writes each line at once."""
    out = tmp / "run.jsonl"
    r = joules("wrap", *SIM, "--output", out, "--", TRAINER, "--steps", "12", "--step-ms", "100",
               "--jitter", "0", "--setup-ms", "100")
    assert r.returncode == 0, r.stderr
    steps = [x for x in read_jsonl(out) if x["type"] == "step"]
    assert len(steps) == 11
    for s in steps:
        assert s["duration_s"] == pytest.approx(0.1, abs=0.02)


def test_no_pty_sets_pythonunbuffered(tmp):
    out = tmp / "run.jsonl"
    script = "import time\nfor i in range(1, 9):\n    time.sleep(0.05)\n    print(f'step {i}/8 loss 1.0')\n"
    r = joules("wrap", *SIM, "--no-pty", "--output", out, "--", sys.executable, "-c", script)
    assert r.returncode == 0, r.stderr
    steps = [x for x in read_jsonl(out) if x["type"] == "step"]
    assert len(steps) == 7
    assert all(s["duration_s"] == pytest.approx(0.05, abs=0.02) for s in steps)


def test_inline_energy_on_step_lines():
    r = joules("wrap", *SIM, "-q", "--inline", "--", TRAINER, "--steps", "5", "--step-ms", "30",
               "--setup-ms", "50")
    lines = r.stdout.splitlines()
    step_lines = [l for l in lines if l.startswith("step ")]
    assert len(step_lines) == 5
    assert "energy:" not in step_lines[0]  # it closes setup, not a step
    for l in step_lines[1:]:
        assert " energy:" in l and "J/step avg:" in l and l.endswith("W"), l
    assert "training done" in lines[-1]


def test_no_inline_leaves_output_untouched():
    r = joules("wrap", *SIM, "-q", "--", TRAINER, "--steps", "3", "--step-ms", "10", "--setup-ms", "10")
    assert "energy:" not in r.stdout  # stdout is a pipe here: no annotations by default


def test_custom_step_regex(tmp):
    out = tmp / "run.jsonl"
    script = "for i in 1 2 3 4; do echo \"it=$i/4 done\"; sleep 0.05; done"
    r = joules("wrap", *SIM, "--output", out, "--step-regex", r"it=(\d+)/(?<total>\d+)", "--", "sh", "-c", script)
    assert r.returncode == 0, r.stderr
    steps = [x for x in read_jsonl(out) if x["type"] == "step"]
    assert [s["step"] for s in steps] == [2, 3, 4]
    assert all(s["total_steps"] == 4 for s in steps)


def test_bad_step_regex_is_bad_input(tmp):
    marker = tmp / "started"
    r = joules("wrap", *SIM, "--step-regex", "step (\\d+", "--", "touch", marker)
    assert r.returncode == 2 and r.stderr.startswith("joules: error: ")
    assert not marker.exists()


def test_prediction_of_the_whole_run(tmp):
    out = tmp / "run.jsonl"
    r = joules("wrap", *SIM, "--output", out, "--predict-after", "5", "--warmup-steps", "2", "--",
               TRAINER, "--steps", "40", "--step-ms", "20", "--jitter", "0", "--setup-ms", "50")
    assert r.returncode == 0, r.stderr
    predictions = [x for x in read_jsonl(out) if x["type"] == "prediction"]
    assert predictions and predictions[0]["total_steps"] == 40
    assert [p["milestone_percent"] for p in predictions] == [0, 50, 90]
    end = read_jsonl(out)[-1]
    # Steps are regular: the prediction of the whole run is close to what it was.
    assert predictions[0]["energy_j"] == pytest.approx(end["energy_j"], rel=0.15)
    assert "prediction at step" in r.stderr


def test_tokens_per_step_gives_joules_per_token(tmp):
    out = tmp / "run.jsonl"
    joules("wrap", *SIM, "--output", out, "--tokens-per-step", "1000", "--", TRAINER, "--steps", "5",
           "--step-ms", "20", "--setup-ms", "20")
    records = read_jsonl(out)
    for s in (x for x in records if x["type"] == "step"):
        assert s["tokens"] == 1000
        assert s["joules_per_token"] == pytest.approx(s["energy_j"] / 1000)
    assert records[-1]["wrap"]["tokens"] == 4000


def test_exit_status_and_signals_as_in_run(tmp):
    assert joules("wrap", *SIM, "-q", "--", "sh", "-c", "exit 5").returncode == 5
    out = tmp / "run.jsonl"
    p = subprocess.Popen([JOULES, "wrap", *SIM, "--output", str(out), "--", "sleep", "30"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=10) == 128 + signal.SIGTERM
    end = read_jsonl(out)[-1]
    assert end["status"] == "interrupted" and end["forwarded_signal"] == signal.SIGTERM
