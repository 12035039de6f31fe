"""How each tool measures a whole command (`joules run` and its peers), and how its total GPU
energy is read back from what it wrote.  One place, so that every figure invokes a tool the same
documented way:

  joules        joules run -q -o FILE -- CMD
  matcha        matcha run --output FILE -- CMD                       (its JSONL records)
  zeus          python bench/peers/zeus_run.py --out FILE -- CMD      (ZeusMonitor window; Zeus
                                                                       has no command wrapper)
  codecarbon    codecarbon monitor --offline --country-iso-code USA --no-api -- CMD
                                                                      (emissions.csv, gpu_energy)
  carbontracker carbontracker --log_dir DIR CMD                        (its logs, read with its
                                                                       own parser)
"""
from __future__ import annotations

import csv
import json
import pathlib
import subprocess

from .common import JOULES, PEERS, VENV, VPY

DEFAULT_INTERVAL = {
    "joules": "100 ms sampler",
    "matcha": "100 ms poller",
    "zeus": "no poller on GPUs with a counter (reads at window ends)",
    "codecarbon": "1 s scheduler, 15 s measurements (10 s in `monitor`)",
    "carbontracker": "1 s sampler",
}


def run_argv(tool: str, cmd: list[str], out: pathlib.Path) -> tuple[list[str], pathlib.Path | None]:
    """argv of `tool` measuring cmd, writing its result under the folder out; and its cwd."""
    out.mkdir(parents=True, exist_ok=True)
    if tool == "joules":
        return [str(JOULES), "run", "-q", "-o", str(out / "joules.jsonl"), "--", *cmd], None
    if tool == "matcha":
        return [str(VENV / "bin" / "matcha"), "run", "--output", str(out / "matcha.jsonl"), "--",
                *cmd], None
    if tool == "zeus":
        return [str(VPY), str(PEERS / "zeus_run.py"), "--out", str(out / "zeus.json"), "--",
                *cmd], None
    if tool == "codecarbon":
        return [str(VENV / "bin" / "codecarbon"), "monitor", "--offline", "--country-iso-code",
                "USA", "--no-api", "--", *cmd], out
    if tool == "carbontracker":
        return [str(VENV / "bin" / "carbontracker"), "--log_dir", str(out / "ct"), *cmd], out
    raise ValueError(tool)


def _jsonl(path: pathlib.Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def energy_j(tool: str, out: pathlib.Path, env: dict) -> tuple[float | None, str | None]:
    """(total GPU energy in J, None) or (None, why it could not be read)."""
    try:
        if tool == "joules":
            end = [r for r in _jsonl(out / "joules.jsonl") if r["type"] == "session_end"][-1]
            return sum(d["energy_j"] for d in end["devices"] if d.get("kind", "gpu") == "gpu"), None
        if tool == "matcha":
            end = [r for r in _jsonl(out / "matcha.jsonl") if r["type"] == "session_end"][-1]
            return float(end["total_energy_j"]), None
        if tool == "zeus":
            r = json.loads((out / "zeus.json").read_text())
            return float(sum(r["gpu_energy_j"].values())), None
        if tool == "codecarbon":
            with open(out / "emissions.csv", newline="") as f:
                row = list(csv.DictReader(f))[-1]
            return float(row["gpu_energy"]) * 3.6e6, None
        if tool == "carbontracker":
            p = subprocess.run([str(VPY), str(PEERS / "carbontracker_energy.py"), str(out / "ct")],
                               env=env, capture_output=True, text=True, timeout=120)
            r = json.loads(p.stdout.strip().splitlines()[-1])
            if "error" in r:
                return None, r["error"]
            return float(r["gpu_energy_j"]), None
    except (OSError, ValueError, KeyError, IndexError) as e:
        return None, f"no result: {type(e).__name__}: {e}"
    raise ValueError(tool)
