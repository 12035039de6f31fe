"""Shared helpers for the black-box tests: they run the built joules binary as a user would."""
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("JOULES_TEST_BUILD_DIR", ROOT / "build" / "dev"))
JOULES = os.environ.get("JOULES_BIN", str(BUILD / "src" / "joules"))
TRAINER = str(BUILD / "examples" / "joules-toy-trainer")
FAKE_NVML_DIR = pathlib.Path(os.environ.get("FAKE_NVML_DIR", BUILD / "tests" / "fake_nvml"))
FAKE_AMDSMI_DIR = BUILD / "tests" / "fake_amdsmi"
FAKE_ZE_DIR = BUILD / "tests" / "fake_level_zero"
FAKE_HLML_DIR = BUILD / "tests" / "fake_hlml"
SANITIZED = bool(os.environ.get("JOULES_TEST_SANITIZE"))
# Bounds on energy whose edges are placed by reads that must come on time (stepped counters):
# under a sanitizer joules runs several times slower, beside other trees' builds and the
# fuzzers, and a read can come late by milliseconds.  The dev tree holds the stated bounds (0.1 %
# of a 10 s run); the sanitizer trees run the same paths for memory and thread errors within
# five times them.  The dev tree's cases that hold them are marked `timing` and run alone
# (make test-dev; TIMING_MARKED in tests/CMakeLists.txt).
EDGE_SLACK = 5.0 if SANITIZED else 1.0
# A library path that names nothing: the vendor's library is absent.
NO_LIBRARY = str(ROOT / "tests" / "fixtures" / "no-such-library.so")

sys.path.insert(0, str(ROOT / "tests" / "fake_nvml"))
sys.path.insert(0, str(ROOT / "tests" / "fake_common"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import schema_check  # noqa: E402  tests/cli/schema_check.py

# Hermetic: the host's RAPL counters (readable when CI runs as root) and region must not leak into
# runs whose energy tests compare with GPU truth.  RAPL tests point JOULES_POWERCAP_ROOT at a
# fixture tree (tests/fixtures/powercap) themselves.
os.environ["JOULES_POWERCAP_ROOT"] = str(ROOT / "tests" / "fixtures" / "powercap" / "absent")
os.environ.pop("JOULES_REGION", None)
# Likewise the host's own GPU libraries: `--backend auto` opens every vendor's it finds, and a
# test of one vendor's fake must not read a real GPU of another.  Each test names the fakes it
# uses (fake_gpus, fake_amd, fake_intel, fake_gaudi).
for _name in ("JOULES_AMDSMI_LIBRARY", "JOULES_ROCM_SMI_LIBRARY", "JOULES_LEVEL_ZERO_LIBRARY",
              "JOULES_HLML_LIBRARY"):
    os.environ[_name] = NO_LIBRARY
for _name in ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ZE_AFFINITY_MASK",
              "ZE_FLAT_DEVICE_HIERARCHY", "ZES_ENABLE_SYSMAN"):
    os.environ.pop(_name, None)
# Power-limit journals (joules tune, sweep) go to a directory of this test session, never to the
# machine's /var/lib/joules; the tests of tune give each run a directory of its own.
os.environ["JOULES_STATE_DIR"] = tempfile.mkdtemp(prefix="joules-state-")


def joules(*args, env=None, input=None, timeout=60, **kw):
    """Runs joules to completion and returns the CompletedProcess (text mode)."""
    full_env = dict(os.environ)
    full_env.pop("CUDA_VISIBLE_DEVICES", None)
    full_env.pop("NVIDIA_VISIBLE_DEVICES", None)
    full_env.pop("JOULES_RUN_ID", None)
    full_env.pop("SLURM_JOB_ID", None)
    full_env.pop("SLURM_STEP_ID", None)
    if env:
        full_env.update(env)
    return subprocess.run([JOULES, *map(str, args)], env=full_env, input=input, capture_output=True,
                          text=True, timeout=timeout, **kw)


def words(text):
    """`text` with every run of white space made one space: help wraps where the width says."""
    return " ".join(text.split())


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "timing: bounds energy to 0.1 % of the truth or counts the reads that cost "
        "CPU; in the dev tree it runs with nothing else on the machine (make test-dev)")


def ended_records(path):
    """The records of a JSONL file that joules may still be writing: only lines that have
    ended count (a reader can see the first part of a line that crosses a page)."""
    path = pathlib.Path(path)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().split("\n")[:-1] if line.strip()]


def read_jsonl(path):
    """Every line of a JSONL file, parsed; fails the test if any line is not JSON or a record does
    not match its schema in docs/schema (schema_check.py)."""
    lines = pathlib.Path(path).read_text().splitlines()
    records = [json.loads(line) for line in lines]
    for r in records:
        if isinstance(r, dict) and r.get("schema_version") is not None:
            schema_check.validate(r)
    return records


def records_of(text, kind):
    """The records of type `kind` among the lines of `text`, each checked against its schema."""
    out = []
    for line in text.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            if r.get("type") == kind:
                if r.get("schema_version") is not None:
                    schema_check.validate(r)
                out.append(r)
    return out


def wait_for(predicate, timeout=10.0, step=0.01):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return False


@pytest.fixture
def tmp(tmp_path):
    return tmp_path


@pytest.fixture
def procs():
    """Processes a test started and leaves running (servers): killed after it."""
    started = []
    yield started
    for p in started:
        p.kill()


def fake_gpus(scenario, variant="full", epoch_before_s=10.0):
    """Environment that points joules at the fake NVML with `scenario` (a dict).

    Scenario time 0 is put `epoch_before_s` in the past: a real energy counter has been advancing
    since the driver loaded.  Returns (env, epoch_ns)."""
    epoch_ns = time.monotonic_ns() - int(epoch_before_s * 1e9)
    env = {
        "JOULES_NVML_LIBRARY": str(FAKE_NVML_DIR / variant / "libnvidia-ml.so.1"),
        "FAKE_NVML_SCENARIO": json.dumps(scenario),
        "FAKE_NVML_EPOCH_NS": str(epoch_ns),
    }
    return env, epoch_ns


def fake_amd(scenario, epoch_before_s=10.0, rocm_smi=False):
    """Environment that points joules at the fake AMD SMI (or, with rocm_smi, the fake ROCm SMI
    alone) with `scenario`, and at no NVML.  Returns (env, epoch_ns), as fake_gpus does."""
    epoch_ns = time.monotonic_ns() - int(epoch_before_s * 1e9)
    env = {
        "JOULES_NVML_LIBRARY": NO_LIBRARY,
        "JOULES_AMDSMI_LIBRARY": NO_LIBRARY if rocm_smi else str(FAKE_AMDSMI_DIR / "amdsmi" / "libamd_smi.so"),
        "JOULES_ROCM_SMI_LIBRARY": str(FAKE_AMDSMI_DIR / "rocm_smi" / "librocm_smi64.so"),
        "FAKE_AMDSMI_SCENARIO": json.dumps(scenario),
        "FAKE_AMDSMI_EPOCH_NS": str(epoch_ns),
    }
    return env, epoch_ns


def fake_intel(scenario, epoch_before_s=10.0, variant="full"):
    """Environment that points joules at the fake Level Zero loader with `scenario`, and at no
    NVML.  Returns (env, epoch_ns)."""
    epoch_ns = time.monotonic_ns() - int(epoch_before_s * 1e9)
    env = {
        "JOULES_NVML_LIBRARY": NO_LIBRARY,
        "JOULES_LEVEL_ZERO_LIBRARY": str(FAKE_ZE_DIR / variant / "libze_loader.so.1"),
        "FAKE_ZE_SCENARIO": json.dumps(scenario),
        "FAKE_ZE_EPOCH_NS": str(epoch_ns),
    }
    return env, epoch_ns


def fake_gaudi(scenario, epoch_before_s=10.0):
    """Environment that points joules at the fake HLML (tests/fake_hlml) with `scenario`, and at
    no NVML.  Returns (env, epoch_ns)."""
    epoch_ns = time.monotonic_ns() - int(epoch_before_s * 1e9)
    env = {
        "JOULES_NVML_LIBRARY": NO_LIBRARY,
        "JOULES_HLML_LIBRARY": str(FAKE_HLML_DIR / "libhlml.so"),
        "FAKE_HLML_SCENARIO": json.dumps(scenario),
        "FAKE_HLML_EPOCH_NS": str(epoch_ns),
    }
    return env, epoch_ns


def device_truth_j(device_spec, epoch_ns, start_mono_s, end_mono_s):
    """Exact energy of one device of any fake's scenario between two CLOCK_MONOTONIC instants
    (its `power` function; tests/fake_common/power.py)."""
    import power  # tests/fake_common/power.py

    d = power.PowerDevice(device_spec, 10**9)
    epoch_s = epoch_ns / 1e9
    return d.energy_j(end_mono_s - epoch_s) - d.energy_j(start_mono_s - epoch_s)


def truth_j(scenario, device, epoch_ns, start_mono_s, end_mono_s):
    """Exact energy of `device` between two CLOCK_MONOTONIC instants, from the scenario."""
    import scenario as fake  # tests/fake_nvml/scenario.py

    d = fake.load(scenario).devices[device]
    epoch_s = epoch_ns / 1e9
    return d.energy_j(end_mono_s - epoch_s) - d.energy_j(start_mono_s - epoch_s)
