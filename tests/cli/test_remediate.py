"""`joules remediate` against stand-ins for Slurm's `scontrol` and Kubernetes' `kubectl` on PATH
that record every call: a dry run runs and writes nothing, --execute runs exactly the documented
command, the allow-list and the rate limit hold, every decision is a journal line, and a
`joules doctor --json` report with a critical finding becomes the reason."""
import json
import os
import stat

import pytest

from conftest import fake_gpus, joules

RECORDER = """#!/bin/sh
printf '%s\\n' "$(basename "$0") $*" >> "$CALLS"
printf 'node %s\\033[31m\\n' "$JOULES_REMEDIATE_NODE"
exit "${FAKE_STATUS:-0}"
"""


@pytest.fixture
def site(tmp):
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    for name in ("scontrol", "kubectl", "page-oncall"):
        p = bin_dir / name
        p.write_text(RECORDER)
        p.chmod(p.stat().st_mode | stat.S_IXUSR)
    calls = tmp / "calls.log"
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "CALLS": str(calls)}
    files = ["--state-file", tmp / "state", "--journal", tmp / "journal.jsonl"]
    return tmp, env, files, calls


def calls_of(calls):
    return calls.read_text().splitlines() if calls.exists() else []


def journal(tmp):
    path = tmp / "journal.jsonl"
    return [json.loads(l) for l in path.read_text().splitlines()] if path.exists() else []


def test_a_dry_run_prints_the_command_and_runs_and_writes_nothing(site):
    tmp, env, files, calls = site
    for action in ("drain", "cordon"):
        r = joules("remediate", "--action", action, "--node", "gpu-7", "--reason", "GPU 3 lost",
                   *files, env=env)
        assert r.returncode == 0, r.stderr
        expected = {"drain": "scontrol update nodename=gpu-7 state=drain 'reason=GPU 3 lost'",
                    "cordon": "kubectl cordon gpu-7"}[action]
        assert r.stdout == f"dry run (--execute to act): would run: {expected}\n"
    assert calls_of(calls) == []
    assert not (tmp / "state").exists() and not (tmp / "journal.jsonl").exists()


def test_execute_drains_once_and_the_rate_limit_holds_the_second(site):
    tmp, env, files, calls = site
    args = ("remediate", "--node", "gpu-7", "--reason", "ECC errors", "--execute", *files)
    r = joules(*args, env=env)
    assert r.returncode == 0, r.stderr
    assert calls_of(calls) == ["scontrol update nodename=gpu-7 state=drain reason=ECC errors"]
    # The command's output reaches the terminal escaped.
    assert "\x1b" not in r.stdout and "node gpu-7\\x1b[31m" in r.stdout
    r2 = joules(*args, env=env)
    assert r2.returncode == 3, r2.stderr
    assert "gpu-7 was acted on at" in r2.stderr
    assert len(calls_of(calls)) == 1  # held back: nothing ran
    j = journal(tmp)
    assert [x["outcome"] for x in j] == ["done", "rate_limited"]
    assert j[0]["argv"] == ["scontrol", "update", "nodename=gpu-7", "state=drain",
                            "reason=ECC errors"]
    assert j[0]["node"] == "gpu-7" and j[0]["action"] == "drain" and j[0]["exit_status"] == 0
    assert j[0]["reason"] == "ECC errors" and j[1]["exit_status"] is None
    # Another node is not held back by this one; the same node is once the interval is over.
    r3 = joules("remediate", "--node", "gpu-8", "--reason", "x", "--execute", *files, env=env)
    assert r3.returncode == 0, r3.stderr
    r4 = joules(*args, "--min-interval", "0", env=env)
    assert r4.returncode == 0, r4.stderr
    assert len(calls_of(calls)) == 3
    assert sorted(l.split()[0] for l in (tmp / "state").read_text().splitlines()) == [
        "gpu-7", "gpu-8"]


def test_cordon_and_a_command_of_the_allow_list(site):
    tmp, env, files, calls = site
    r = joules("remediate", "--action", "cordon", "--node", "k8s-node-1", "--reason", "lost GPU",
               "--execute", *files, env=env)
    assert r.returncode == 0, r.stderr
    r = joules("remediate", "--action", "command", "--allow", "drain,command", "--node", "n2",
               "--reason", "remap failure", "--execute", *files, "--", "page-oncall", "--urgent",
               env=env)
    assert r.returncode == 0, r.stderr
    assert calls_of(calls) == ["kubectl cordon k8s-node-1", "page-oncall --urgent"]
    assert "node n2" in r.stdout  # JOULES_REMEDIATE_NODE reached the command


@pytest.mark.parametrize("args, message", [
    (["--action", "command", "--", "page-oncall"], "--action command: not in --allow"),
    (["--action", "cordon", "--allow", "drain"], "--action cordon: not in --allow"),
    (["--allow", "drain,reboot"], "--allow 'drain,reboot'"),
    (["--action", "command", "--allow", "command"], "expected the command"),
    (["--node", "a b"], "--node 'a b'"),
])
def test_what_is_not_allowed_exits_2_and_runs_nothing(site, args, message):
    tmp, env, files, calls = site
    r = joules("remediate", "--reason", "x", "--execute", *files, *args, env=env)
    assert r.returncode == 2, r
    assert message in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert calls_of(calls) == [] and journal(tmp) == []


def test_a_failed_action_is_journalled_and_not_counted_by_the_rate_limit(site):
    tmp, env, files, calls = site
    args = ("remediate", "--node", "gpu-7", "--reason", "x", "--execute", *files)
    r = joules(*args, env=dict(env, FAKE_STATUS="1"))
    assert r.returncode == 1 and "failed (exit status 1)" in r.stderr, r.stderr
    r = joules(*args, env=env)
    assert r.returncode == 0, r.stderr
    assert [x["outcome"] for x in journal(tmp)] == ["failed", "done"]
    assert len(calls_of(calls)) == 2


def test_a_doctor_report_acts_only_on_a_critical_finding(site):
    tmp, env, files, calls = site
    h100 = {"name": "NVIDIA H100 80GB HBM3", "architecture": "hopper"}
    healthy_env, _ = fake_gpus({"devices": [h100, h100]})
    faulty_env, _ = fake_gpus({"devices": [h100, dict(h100, health={"ecc_uncorrected": 2})]})
    for name, e in (("healthy", healthy_env), ("faulty", faulty_env)):
        r = joules("doctor", "--json", env=e)
        (tmp / f"{name}.json").write_text(r.stdout)
    r = joules("remediate", "--node", "gpu-7", "--report", tmp / "healthy.json", "--execute",
               *files, env=env)
    assert r.returncode == 0 and "no critical finding" in r.stderr, r.stderr
    assert calls_of(calls) == []
    r = joules("remediate", "--node", "gpu-7", "--report", "-", "--execute", *files, env=env,
               input=(tmp / "faulty.json").read_text())
    assert r.returncode == 0, r.stderr
    [call] = calls_of(calls)
    assert call.startswith("scontrol update nodename=gpu-7 state=drain reason=joules doctor: GPU 1 ")
    assert "ecc" in call
    r = joules("remediate", "--report", tmp / "calls.log", *files, env=env)
    assert r.returncode == 2 and "joules doctor --json" in r.stderr
