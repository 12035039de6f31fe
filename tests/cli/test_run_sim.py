"""`joules run` as a user sees it, on the simulated backend (no GPU, no fake NVML needed)."""
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import JOULES, joules, read_jsonl, records_of, wait_for

SIM = ["--backend", "sim"]
# Constant utilisation u on an H100 SXM model: 70 W idle + 630 W * u per GPU.
CONST = ["--backend", "sim", "--sim-profile", "0.5", "--sim-gpus", "2"]
CONST_W = 2 * (70.0 + 630.0 * 0.5)


def sessions(records):
    """session_start and session_end records, without the `sample` records between them."""
    return [r for r in records if r["type"] != "sample"]


def test_energy_is_power_times_duration_and_the_summary_says_how(tmp):
    out = tmp / "run.jsonl"
    r = joules("run", *CONST, "--output", out, "--", "sleep", "1")
    assert r.returncode == 0, r.stderr
    start, end = sessions(read_jsonl(out))
    assert start["type"] == "session_start" and end["type"] == "session_end"
    assert end["energy_j"] == pytest.approx(CONST_W * end["duration_s"], rel=1e-4)
    assert end["duration_s"] == pytest.approx(1.0, abs=0.2)
    assert end["method"] == "simulated"
    assert end["status"] == "completed"
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("joules: ") and "2x NVIDIA H100 80GB HBM3" in line
    assert "simulated" in line and " J (" in line and "Wh)" in line


def test_child_output_and_input_pass_through_untouched():
    r = joules("run", *SIM, "-q", "--", "sh", "-c", "cat; echo to-stderr >&2", input="hello\nworld\n")
    assert r.returncode == 0
    assert r.stdout == "hello\nworld\n"
    assert r.stderr == "to-stderr\n"


def test_exit_status_is_the_childs():
    assert joules("run", *SIM, "-q", "--", "sh", "-c", "exit 3").returncode == 3
    r = joules("run", *SIM, "--json", "--", "sh", "-c", "kill -TERM $$")
    assert r.returncode == 128 + signal.SIGTERM
    end = records_of(r.stderr, "session_end")[0]
    assert end["exit_signal"] == signal.SIGTERM and end["exit_status"] == 143
    assert end["status"] == "interrupted"
    r = joules("run", *SIM, "--json", "--", "sh", "-c", "exit 7")
    assert records_of(r.stderr, "session_end")[0]["status"] == "child_failed"


def test_command_not_found_or_not_executable(tmp):
    r = joules("run", *SIM, "--", "no-such-command-xyz")
    assert r.returncode == 127
    assert r.stderr == "joules: error: cannot run 'no-such-command-xyz': command not found in PATH\n"
    script = tmp / "script.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    r = joules("run", *SIM, "--", str(script))
    assert r.returncode == 126
    assert "not an executable file" in r.stderr and len(r.stderr.splitlines()) == 1


@pytest.mark.parametrize("args,fragment", [
    (["--gpus", "0-3"], "ranges such as '0-3' are not accepted"),
    (["--gpus", "7"], "no GPU has index 7"),
    (["--interval", "0"], "--interval '0'"),
    (["--label", "=x"], "--label '=x'"),
    (["--frobnicate"], "unknown option '--frobnicate'"),
    (["--output", "/nonexistent-dir/x.jsonl"], "--output '/nonexistent-dir/x.jsonl': cannot open it"),
])
def test_bad_input_is_one_line_exit_2_before_anything_starts(tmp, args, fragment):
    marker = tmp / "started"
    out = tmp / "keep.jsonl"
    out.write_text("precious\n")
    extra = [] if "--output" in args else ["--output", str(out)]
    # --output comes after the bad value in argv order, but nothing may be truncated either way.
    r = joules("run", *SIM, "--sim-gpus", "4", *args, *extra, "--", "touch", str(marker))
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("joules: error: ") and fragment in r.stderr
    assert len(r.stderr.splitlines()) == 1
    assert not marker.exists()
    assert out.read_text() == "precious\n"


def test_empty_command_is_bad_input():
    r = joules("run", *SIM)
    assert r.returncode == 2 and "needs a command to run" in r.stderr


def test_signals_are_forwarded_to_the_childs_process_group(tmp):
    out = tmp / "run.jsonl"
    got = tmp / "got"
    # The shell's child (sleep) is in the same group and must get the signal too.
    script = f"trap 'echo $0 >> {got}; exit 0' TERM INT HUP; sleep 30 & wait"
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        if got.exists():
            got.unlink()
        p = subprocess.Popen([JOULES, "run", *SIM, "--output", str(out), "--", "sh", "-c", script, "x"],
                             stderr=subprocess.PIPE, text=True)
        assert wait_for(lambda: out.exists() and out.read_text().count("\n") >= 1)
        time.sleep(0.2)
        p.send_signal(sig)
        p.wait(timeout=10)
        assert p.returncode == 0  # the child trapped the signal and exited 0
        assert got.read_text().strip() == "x"
        end = read_jsonl(out)[-1]
        assert end["type"] == "session_end"
        assert end["forwarded_signal"] == sig
        assert end["status"] == "interrupted"


def test_sigkill_of_joules_leaves_a_file_every_line_of_which_parses(tmp):
    out = tmp / "run.jsonl"
    p = subprocess.Popen([JOULES, "run", *SIM, "--output", str(out), "--", "sleep", "30"],
                         stderr=subprocess.DEVNULL)
    assert wait_for(lambda: out.exists() and out.read_text().endswith("\n"))
    p.kill()
    p.wait()
    records = read_jsonl(out)
    assert [r["type"] for r in records] == ["session_start"]
    subprocess.run(["pkill", "-f", "sleep 30"], check=False)


def test_json_goes_to_stderr_instead_of_the_summary():
    r = joules("run", *SIM, "--json", "--label", "team=infra", "--", "true")
    assert r.returncode == 0
    lines = r.stderr.splitlines()
    assert all(line.startswith("{") for line in lines)
    start, end = (json.loads(line) for line in lines)
    assert start["labels"] == {"team": "infra"} == end["labels"]
    assert start["run_id"] == end["run_id"] and len(start["run_id"]) == 12


def test_run_id_comes_from_option_env_or_slurm():
    def run_id(*args, env=None):
        r = joules("run", *SIM, "--json", *args, "--", "true", env=env)
        return records_of(r.stderr, "session_end")[0]["run_id"]
    assert run_id("--run-id", "exp-42") == "exp-42"
    assert run_id(env={"JOULES_RUN_ID": "from-env"}) == "from-env"
    assert run_id(env={"SLURM_JOB_ID": "991", "SLURM_STEP_ID": "3"}) == "991.3"
    assert run_id("--run-id", "opt", env={"JOULES_RUN_ID": "env"}) == "opt"


def test_schema_v1_fields(tmp):
    out = tmp / "run.jsonl"
    r = joules("run", *CONST, "--output", out, "--label", "a=1", "--", "true")
    assert r.returncode == 0
    start, end = sessions(read_jsonl(out))
    for key in ("schema_version", "run_id", "hostname", "labels", "time", "command", "backend",
                "driver_version", "nvml_version", "devices", "start_time", "start_monotonic_s"):
        assert key in start, key
    for key in ("schema_version", "run_id", "hostname", "labels", "status", "exit_status",
                "start_time", "end_time", "start_monotonic_s", "end_monotonic_s", "duration_s",
                "energy_j", "energy_wh", "avg_power_w", "peak_power_w", "samples", "method", "devices"):
        assert key in end, key
    assert start["command"] == ["true"]
    assert start["time"].endswith("Z") and "T" in start["time"]
    d = end["devices"][0]
    for key in ("index", "uuid", "name", "method", "energy_j", "avg_power_w", "peak_power_w"):
        assert key in d, key
    assert sum(x["energy_j"] for x in end["devices"]) == pytest.approx(end["energy_j"], abs=1e-5)


def test_append_keeps_earlier_runs_and_truncate_is_the_default(tmp):
    out = tmp / "runs.jsonl"
    joules("run", *SIM, "-q", "--output", out, "--", "true")
    joules("run", *SIM, "-q", "--output", out, "--append", "--", "true")
    assert len(sessions(read_jsonl(out))) == 4
    joules("run", *SIM, "-q", "--output", out, "--", "true")
    assert len(sessions(read_jsonl(out))) == 2


def test_help_and_version():
    r = joules("run", "--help")
    assert r.returncode == 0 and "Usage: joules run [OPTIONS] [--] CMD [ARGS...]" in r.stdout
    assert joules("--version").stdout.startswith("joules ")
    r = joules()
    assert r.returncode == 2 and "Commands:" in r.stdout
    r = joules("frobnicate")
    assert r.returncode == 2 and r.stderr == "joules: error: unknown command 'frobnicate'; see joules --help\n"
    r = joules("wrapp")
    assert r.returncode == 2 and r.stderr == (
        "joules: error: unknown command 'wrapp' (did you mean wrap?); see joules --help\n")


def test_no_gpu_is_a_clear_error_that_mentions_sim(tmp):
    r = joules("run", "--", "true", env={"JOULES_NVML_LIBRARY": str(tmp / "missing.so")})
    assert r.returncode == 125
    assert "--backend sim" in r.stderr and len(r.stderr.splitlines()) == 1
