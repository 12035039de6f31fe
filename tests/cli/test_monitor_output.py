"""`joules monitor`'s host power from RAPL counters and its --output file, rotated by size (the
live view itself: test_monitor.py)."""
import json
import os
import shutil
import signal
import subprocess
import threading
import time

import pytest

from conftest import JOULES, ROOT, joules
from test_monitor import scenario, stream


def test_cpu_and_dram_power_from_their_counters(tmp):
    """RAPL counters give energy only: monitor shows their power from the differences, and the
    node's power includes it as its energy does."""
    root = tmp / "powercap"
    shutil.copytree(ROOT / "tests" / "fixtures" / "powercap" / "intel-2s-dram", root)
    rates = {"intel-rapl:0": 40.0, "intel-rapl:1": 60.0, "intel-rapl:0:0": 8.0,
             "intel-rapl:1:0": 12.0}  # W
    stop = threading.Event()
    t0 = time.monotonic()

    def write():
        while not stop.is_set():
            t = time.monotonic() - t0
            for zone, w in rates.items():
                f = root / zone / "energy_uj"
                f.with_suffix(".tmp").write_text(f"{100_000_000 + int(w * t * 1e6)}\n")
                os.replace(f.with_suffix(".tmp"), f)
            time.sleep(0.01)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        rc, out, err = stream(["--json", "--interval", "200"], scenario(), 4.0,
                              env={"JOULES_POWERCAP_ROOT": str(root)})
        plain_rc, plain, _ = stream(["--interval", "200"], scenario(), 3.0,
                                    env={"JOULES_POWERCAP_ROOT": str(root)})
    finally:
        stop.set()
        writer.join()
    last = json.loads(out.splitlines()[-1])
    host = {(d["kind"], d["index"]): d["power_w"] for d in last["devices"] if d["kind"] != "gpu"}
    want = {("cpu", 0): 40.0, ("cpu", 1): 60.0, ("dram", 0): 8.0, ("dram", 1): 12.0}
    assert set(host) == set(want), last["devices"]
    for k, w in want.items():
        assert host[k] == pytest.approx(w, rel=0.15), (k, host)
    assert last["node"]["power_w"] == pytest.approx(
        sum(d["power_w"] for d in last["devices"]), abs=0.01)
    assert last["node"]["power_w"] == pytest.approx(470 + 120, rel=0.05)
    rows = [l.split() for l in plain.splitlines() if not l.startswith("#")]
    cpu0 = [r for r in rows if r[2] == "cpu0"][-1]
    assert float(cpu0[3]) == pytest.approx(40.0, rel=0.15), cpu0


def test_output_is_rotated_past_its_size_keeping_n_files(tmp):
    out = tmp / "gpus.jsonl"
    # A record of two simulated GPUs is about 3.5 kB: 8 kB holds two, so files rotate every two.
    p = subprocess.Popen([JOULES, "monitor", "--backend", "sim", "--sim-gpus", "2", "--interval",
                          "50", "--output", out, "--output-max-size", "8000", "--output-keep",
                          "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2.0)
    p.send_signal(signal.SIGINT)
    stdout, stderr = p.communicate(timeout=20)
    assert p.returncode == 128 + signal.SIGINT, stderr
    assert stdout == ""  # the records went to the file
    files = sorted(x.name for x in tmp.iterdir() if x.name.startswith("gpus.jsonl"))
    assert files == ["gpus.jsonl", "gpus.jsonl.1", "gpus.jsonl.2"], files
    times = []
    for name in ("gpus.jsonl.2", "gpus.jsonl.1", "gpus.jsonl"):
        text = (tmp / name).read_text()
        assert len(text.encode()) <= 8000 and text.endswith("\n"), name
        records = [json.loads(line) for line in text.splitlines()]
        assert records and all(r["type"] == "monitor_sample" for r in records)
        times += [r["monotonic_s"] for r in records]
    assert len((tmp / "gpus.jsonl.2").read_text().splitlines()) == 2  # a full file
    assert times == sorted(times) and len(set(times)) == len(times)  # oldest first, none twice


def test_rotation_options_need_output():
    r = joules("monitor", "--backend", "sim", "--output-keep", "3")
    assert r.returncode == 2 and "--output-keep applies only with --output" in r.stderr
