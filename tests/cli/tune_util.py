"""Helpers of the `joules tune` and `joules sweep` tests: the fake GPUs with their workload
curves, the trainer that feels the limits, and what the fake driver holds."""
from __future__ import annotations

import pathlib

from conftest import TRAINER, fake_gpus

ORIGINAL_MW = 700_000  # the fake's default limit (tests/fake_nvml/README.md)


def tune_env(tmp: pathlib.Path, devices: list[dict], variant: str = "full", **top) -> dict:
    """The fake NVML with `devices`, its state file (the limits every process sees) and a
    journal directory of the test's own."""
    env, _ = fake_gpus({"devices": devices, **top}, variant)
    env["FAKE_NVML_STATE_FILE"] = str(tmp / "fake-state")
    env["JOULES_STATE_DIR"] = str(tmp / "journal")
    env["JOULES_POWERCAP_ROOT"] = "/nonexistent-powercap"
    return env


def trainer(env: dict, steps: int, step_ms: float = 40, setup_ms: float = 50) -> list[str]:
    """The toy trainer, its steps stretched by the limits in force (--slowdown-file)."""
    return [TRAINER, "--steps", str(steps), "--step-ms", str(step_ms), "--jitter", "0",
            "--setup-ms", str(setup_ms), "--slowdown-file", env["FAKE_NVML_STATE_FILE"]]


def state_files(env: dict) -> list[str]:
    """The state files of the fake drivers `env` names (NVIDIA's, AMD's, Level Zero's)."""
    keys = ("FAKE_NVML_STATE_FILE", "FAKE_AMDSMI_STATE_FILE", "FAKE_ZE_STATE_FILE")
    return [env[k] for k in keys if k in env]


def limits(env: dict) -> dict[str, int]:
    """uuid -> limit in mW, as the fake drivers hold them (their state files)."""
    out = {}
    for name in state_files(env):
        path = pathlib.Path(name)
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            if line and not line.startswith("#"):
                uuid, mw, _ = line.split()
                out[uuid] = int(mw)
    return out


def journals(env: dict) -> list[pathlib.Path]:
    return sorted(pathlib.Path(env["JOULES_STATE_DIR"]).glob("*.journal"))


def parse_journal(text: str) -> dict | None:
    """A journal as joules writes it (src/control/journal.cpp), or None when it is not whole."""
    lines = text.split("\n")
    if not lines or lines[0] != "joules-power-limit-journal 1" or "end" not in lines:
        return None
    fields = dict(line.split(" ", 1) for line in lines[1:lines.index("end")] if " " in line)
    return fields if "uuid" in fields and "original_mw" in fields else None


def uuid(index: int) -> str:
    return "GPU-00000000-0000-4000-8000-0000000000%02x" % index
