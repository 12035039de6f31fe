"""`joules wrap` as a user sees it, on the simulated backend."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import JOULES, SANITIZED, TRAINER, joules, read_jsonl, records_of

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
    # Block-buffered, the lines would all come at the end, 0 s apart.  The sanitizer trees,
    # slower and run beside the fuzzers, place a line up to 50 ms late (27 ms was seen).
    for s in steps:
        assert s["duration_s"] == pytest.approx(0.1, abs=0.05 if SANITIZED else 0.02)


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
    assert all(p["scope"] == "run" and p["epochs"] is None for p in predictions)


KERAS_CHILD = r"""
import sys, time
print("Epoch 1/3")
for e in range(3):
    if e:
        print("Epoch %d/3" % (e + 1))
    for k in range(1, 21):
        time.sleep(0.02)
        print("%2d/20 [==============================] - ETA: 0s - loss: 0.5" % k)
"""


def test_prediction_with_per_epoch_counters_covers_every_epoch(tmp):
    # Keras counts batches within an epoch ("k/20") after an "Epoch e/3" header: the run is 3
    # epochs of 20 batches, not 20 steps.
    out = tmp / "run.jsonl"
    r = joules("wrap", *SIM, "--output", out, "--predict-after", "5", "--warmup-steps", "2", "--",
               sys.executable, "-c", KERAS_CHILD)
    assert r.returncode == 0, r.stderr
    records = read_jsonl(out)
    steps = [x for x in records if x["type"] == "step"]
    assert steps[-1]["step"] == 60
    predictions = [x for x in records if x["type"] == "prediction"]
    assert predictions, r.stderr
    assert {p["total_steps"] for p in predictions} == {60}
    assert all(p["scope"] == "run" and p["epochs"] == 3 and p["steps_per_epoch"] == 20
               for p in predictions)
    assert [p["milestone_percent"] for p in predictions] == [0, 50, 90]
    assert predictions[0]["energy_j"] == pytest.approx(records[-1]["energy_j"], rel=0.3)
    assert "(epoch 1 of 3): the whole run" in r.stderr


LIGHTNING_CHILD = r"""
import sys, time
for e in range(2):
    for k in range(1, 21):
        time.sleep(0.02)
        sys.stdout.write("Epoch %d: %3d%%|#  | %d/20 [00:01<00:01, 10.00it/s, loss=0.5, v_num=1]\n"
                         % (e, 5 * k, k))
        sys.stdout.flush()
"""


def test_prediction_when_the_number_of_epochs_is_unknown_is_of_the_epoch(tmp):
    out = tmp / "run.jsonl"
    r = joules("wrap", *SIM, "--output", out, "--predict-after", "5", "--warmup-steps", "2", "--",
               sys.executable, "-c", LIGHTNING_CHILD)
    assert r.returncode == 0, r.stderr
    predictions = [x for x in read_jsonl(out) if x["type"] == "prediction"]
    assert predictions, r.stderr
    first = predictions[0]
    assert first["scope"] == "epoch" and first["epochs"] is None and first["epoch"] == 1
    assert first["total_steps"] == 20
    assert "to the end of epoch 1 (the number of epochs is not in the log)" in r.stderr
    assert "the whole run" not in r.stderr
    # The second epoch is predicted once, at its half.
    second = [p for p in predictions if p["epoch"] == 2]
    assert [(p["total_steps"], p["milestone_percent"]) for p in second] == [(40, 50)]


def test_a_step_line_and_a_phase_line_in_one_read_leave_no_empty_window(tmp):
    out = tmp / "run.jsonl"
    script = ('echo "step 1/9 loss 1"; sleep 0.1; '
              'printf "step 2/9 loss 1\n***** Running Evaluation *****\n"; sleep 0.1; '
              'echo "{\x27eval_loss\x27: 0.5}"; sleep 0.1; echo "step 3/9 loss 1"; sleep 0.1')
    r = joules("wrap", *SIM, "--output", out, "--", "sh", "-c", script)
    assert r.returncode == 0, r.stderr
    records = read_jsonl(out)
    windows = [x for x in records if x["type"] in ("step", "phase")]
    assert [x.get("phase", x.get("step")) for x in windows] == ["setup", 2, "eval", 3, "tail"]
    assert all(x["duration_s"] > 0 for x in windows)
    end = records[-1]
    assert end["wrap"]["conserved"] is True
    assert sum(x["energy_j"] for x in windows) == pytest.approx(end["energy_j"], abs=1e-5)


def test_samples_per_step_gives_joules_per_sample_and_samples_per_joule(tmp):
    out = tmp / "run.jsonl"
    r = joules("wrap", *SIM, "--output", out, "--samples-per-step", "32", "--tokens-per-step",
               "4096", "--", TRAINER, "--steps", "5", "--step-ms", "20", "--setup-ms", "20")
    assert r.returncode == 0, r.stderr
    records = read_jsonl(out)
    steps = [x for x in records if x["type"] == "step"]
    for s in steps:
        assert s["samples"] == 32
        assert s["joules_per_sample"] == pytest.approx(s["energy_j"] / 32)
        assert s["samples_per_joule"] == pytest.approx(32 / s["energy_j"])
        assert s["tokens_per_joule"] == pytest.approx(4096 / s["energy_j"])
    w = records[-1]["wrap"]
    step_j = sum(s["energy_j"] for s in steps)
    assert w["samples"] == 128 and w["tokens"] == 4 * 4096
    assert w["joules_per_sample"] == pytest.approx(step_j / 128)
    assert w["samples_per_joule"] == pytest.approx(128 / step_j)
    assert w["tokens_per_joule"] == pytest.approx(4 * 4096 / step_j)
    assert "J/sample" in r.stderr


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


def test_sigkill_at_random_moments_leaves_files_every_line_of_which_parses(tmp):
    # A trainer printing steps as fast as it can, so that records are being written when the
    # kill lands; ten kills at random instants from start-up to full flow.
    import random
    rng = random.Random(20261123)
    chatty = ("# joules-sigkill-test\nimport sys\nfor i in range(1, 10**7):\n"
              "    sys.stdout.write(f'step {i}/10000000 | loss 2.0\\n')\n")
    for n in range(10):
        out = tmp / f"run{n}.jsonl"
        p = subprocess.Popen([JOULES, "wrap", *SIM, "-q", "--no-inline", "--output", str(out),
                              "--", sys.executable, "-c", chatty],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.02, 1.5))
        p.kill()
        p.wait()
        # The trainer, left behind in its own process group (it gets EIO on its terminal soon).
        subprocess.run(["pkill", "-9", "-f", "joules-sigkill-test"], check=False)
        if not out.exists():
            continue
        text = out.read_bytes()
        assert text == b"" or text.endswith(b"\n"), n
        records = read_jsonl(out)  # every line parses
        assert all(r["schema_version"] == 1 for r in records)
        if records:
            assert records[0]["type"] == "session_start"


def test_the_demos_first_prediction_is_within_a_fifth_of_the_actual(tmp):
    # The demo (scripts/demo): eight simulated H100s and the toy trainer's 30 steps.  The sim's
    # start-up phase ends with the trainer's set-up, so the first steps past warm-up already
    # draw what the rest will.
    out = tmp / "demo.jsonl"
    r = joules("wrap", "--backend", "sim", "--sim-gpus", "8", "-q", "--output", out,
               "--tokens-per-step", "524288", "--predict-after", "5", "--", TRAINER, "--steps", "30",
               "--step-ms", "120", "--setup-ms", "1000", "--eval-every", "10", "--eval-ms", "300")
    assert r.returncode == 0, r.stderr
    recs = read_jsonl(out)
    actual = [x for x in recs if x["type"] == "session_end"][0]["energy_j"]
    predictions = [x["energy_j"] for x in recs if x["type"] == "prediction"]
    assert predictions
    assert all(abs(p / actual - 1) <= 0.2 for p in predictions), (predictions, actual)
