"""The restore guarantee of `joules tune` (docs/tuning.md): limits set back when the command
ends, on SIGINT and SIGTERM, when the command crashes; after a SIGKILL at any moment the next
joules to start sets them back; the journal is never half-written; two tunes never share a GPU;
doctor reports a limit left changed without touching it; tune --restore on request."""
import json
import os
import random
import signal
import subprocess
import time

import pytest

import tune_curves as curves
from conftest import JOULES, ended_records, joules, read_jsonl, wait_for
from tune_util import ORIGINAL_MW, journals, limits, parse_journal, trainer, tune_env, uuid


def start_tune(tmp, env, steps=400, extra=()):
    """joules tune in a session of its own; the trainer writes its pid first (it execs)."""
    out = tmp / "run.jsonl"
    pidfile = tmp / "trainer.pid"
    script = f"echo $$ > {pidfile}; exec " + " ".join(trainer(env, steps))
    p = subprocess.Popen([JOULES, "tune", "--no-inline", "-q", "--profile-steps", "4",
                          "--output", str(out), *extra, "--", "sh", "-c", script],
                         env={**os.environ, **env}, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    return p, out, pidfile


def events(out):
    """The tune events in `out` so far (joules may still be writing it)."""
    return [x.get("event") for x in ended_records(out) if x.get("type") == "tune"]


def kill_trainer(pidfile):
    """The trainer outlives a killed joules (its own process group): end it, as ours."""
    if not pidfile.exists():
        return
    pid = int(pidfile.read_text())
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def assert_whole_journals(env):
    for path in journals(env):
        assert parse_journal(path.read_text()) is not None, path.read_text()


def test_sigkill_at_random_moments_then_the_next_joules_sets_the_limits_back(tmp):
    rng = random.Random(20261125)
    devices = [curves.device("knee350"), curves.device("knee350")]
    # Moments: from the very start (the journal being written), during profiling (after a
    # limit changed), after the choice.  The next joules is a different command each time.
    moments = ["start"] * 3 + ["profiling"] * 5 + ["chosen"] * 4
    nexts = [("run", "--", "true"), ("wrap", "--", "true"), ("steps", "/dev/null"),
             ("run", "--backend", "sim", "--", "true")]
    changed_at_kill = {"start": 0, "profiling": 0, "chosen": 0}
    journalled_at_kill = {"start": 0, "profiling": 0, "chosen": 0}
    for i, moment in enumerate(moments):
        d = tmp / f"kill{i}"
        d.mkdir()
        env = tune_env(d, devices)
        p, out, pidfile = start_tune(d, env)
        if moment == "start":
            time.sleep(rng.uniform(0.0, 0.6))
        else:
            wanted = "try" if moment == "profiling" else "choice"
            assert wait_for(lambda: wanted in events(out), timeout=90), (moment, events(out))
            time.sleep(rng.uniform(0.0, 1.0))
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=10)
        kill_trainer(pidfile)
        assert_whole_journals(env)
        left = journals(env)
        journalled_at_kill[moment] += 1 if left else 0
        if set(limits(env).values()) - {ORIGINAL_MW}:
            changed_at_kill[moment] += 1
            assert left, "a limit was changed with no journal"
        nxt = joules(*nexts[i % len(nexts)], env=env)
        assert nxt.returncode == 0, nxt.stderr
        assert limits(env) in ({}, {uuid(0): ORIGINAL_MW, uuid(1): ORIGINAL_MW}), limits(env)
        assert journals(env) == []
        if left:
            assert "set back to 700 W" in nxt.stderr and "ended without setting it back" in \
                nxt.stderr, nxt.stderr
    # The kills did land while limits were changed, and after the choice (whose limit may be
    # the one before tune: the journal is there all the same until the end).
    assert changed_at_kill["profiling"] >= 3, changed_at_kill
    assert journalled_at_kill["profiling"] == 5 and journalled_at_kill["chosen"] == 4, \
        journalled_at_kill


@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM", "crash"])
def test_limits_are_set_back_on_signals_and_when_the_command_crashes(tmp, how):
    env = tune_env(tmp, [curves.device("knee350")])
    if how == "crash":
        # The trainer dies by SIGSEGV once profiling is under way.
        out = tmp / "run.jsonl"
        script = " ".join(trainer(env, 60)) + "; kill -SEGV $$"
        r = joules("tune", "--no-inline", "-q", "--profile-steps", "4", "--output", out, "--",
                   "sh", "-c", script, env=env, timeout=120)
        assert r.returncode == 128 + signal.SIGSEGV, r.stderr
    else:
        p, out, pidfile = start_tune(tmp, env)
        assert wait_for(lambda: "try" in events(out), timeout=60), events(out)
        assert set(limits(env).values()) != {ORIGINAL_MW} or wait_for(
            lambda: set(limits(env).values()) != {ORIGINAL_MW}, timeout=10)
        os.killpg(p.pid, getattr(signal, how))
        p.wait(timeout=30)
        assert p.returncode == 128 + getattr(signal, how), p.stderr.read()
    assert limits(env)[uuid(0)] == ORIGINAL_MW
    assert journals(env) == []
    end = read_jsonl(out)[-1]
    assert end["type"] == "session_end" and end["tune"]["gpus"][0]["restored"] is True


def test_two_tunes_on_one_gpu_the_second_refuses(tmp):
    env = tune_env(tmp, [curves.device("knee350"), curves.device("knee350")])
    first, out, _ = start_tune(tmp, env)
    assert wait_for(lambda: "baseline" in events(out), timeout=30)
    marker = tmp / "second-ran"
    second = joules("tune", "--gpus", "1", "--", "touch", marker, env=env)
    assert second.returncode == 125
    line, = second.stderr.splitlines()
    assert line.startswith("joules: error: GPU 1 (GPU-") and "joules tune (pid" in line, line
    assert str(first.pid) in line and "one joules tune or sweep per GPU at a time" in line
    assert not marker.exists()
    # A sweep is refused the same way; doctor says a tune is under way, and changes nothing.
    sweep = joules("sweep", "--limits", "400", "--", "touch", marker, env=env)
    assert sweep.returncode == 125 and not marker.exists()
    doc = joules("doctor", "--json", env=env)
    report = json.loads(doc.stdout)
    assert {c["gpu"] for c in report["changed_power_limits"] if c["owner_running"]} == {0, 1}
    assert "power_limit_tuning" in [f["code"] for f in report["findings"]]
    os.killpg(first.pid, signal.SIGINT)
    first.wait(timeout=30)
    assert journals(env) == [] and set(limits(env).values()) == {ORIGINAL_MW}


def test_doctor_reports_a_limit_left_changed_and_tune_restore_sets_it_back(tmp):
    env = tune_env(tmp, [curves.device("knee350")])
    p, out, pidfile = start_tune(tmp, env)
    assert wait_for(lambda: "try" in events(out), timeout=60)
    assert wait_for(lambda: limits(env)[uuid(0)] != ORIGINAL_MW, timeout=10)
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=10)
    kill_trainer(pidfile)
    left_at = limits(env)[uuid(0)]
    calls = tmp / "calls.jsonl"
    doc = joules("doctor", "--json", env={**env, "FAKE_NVML_CALL_LOG": str(calls)})
    report = json.loads(doc.stdout)
    changed, = report["changed_power_limits"]
    assert changed["gpu"] == 0 and changed["original_limit_w"] == 700
    assert changed["owner_running"] is False and changed["pid"] == p.pid
    finding = next(f for f in report["findings"] if f["code"] == "power_limit_left_changed")
    assert finding["severity"] == "warning" and "joules tune --restore" in finding["fix"]
    assert doc.returncode == 1
    # doctor only reads: the limit and the journal are as they were, and no limit was set.
    assert limits(env)[uuid(0)] == left_at and len(journals(env)) == 1
    log = json.loads(calls.read_text().splitlines()[-1])
    assert "nvmlDeviceSetPowerManagementLimit" not in log["calls"]
    r = joules("tune", "--restore", env=env)
    assert r.returncode == 0, r.stderr
    assert "GPU 0" in r.stderr and "set back to 700 W" in r.stderr
    assert f"(it was {left_at // 1000} W)" in r.stderr
    assert limits(env)[uuid(0)] == ORIGINAL_MW and journals(env) == []
    again = joules("tune", "--restore", env=env)
    assert again.returncode == 0 and "no power limit is left changed" in again.stderr


def test_a_journal_that_cannot_be_restored_stays_and_says_why(tmp):
    # A journal written by a joules on another machine's GPU (a UUID not here): kept, with why.
    env = tune_env(tmp, [curves.device("knee350")])
    state = tmp / "journal"
    state.mkdir()
    text = ("joules-power-limit-journal 1\nuuid GPU-0000dead-0000-4000-8000-000000000000\n"
            "index 3\nname NVIDIA H100\noriginal_mw 650000\npid 1\ncommand tune\n"
            "started 2026-11-25T00:00:00Z\nboot_id x\nnvml_library "
            f"{env['JOULES_NVML_LIBRARY']}\nend\n")
    (state / "GPU-0000dead-0000-4000-8000-000000000000.journal").write_text(text)
    (state / "GPU-0000dead-0000-4000-8000-000000000000.journal.tmp.999999999").write_text("half")
    r = joules("run", "--", "true", env=env)
    assert r.returncode == 0
    assert "GPU 3" in r.stderr and "could not be set back to 650 W" in r.stderr, r.stderr
    assert len(journals(env)) == 1
    # The temporary file of a write cut short (its writer is gone) was tidied away.
    assert not list(state.glob("*.tmp.*"))
