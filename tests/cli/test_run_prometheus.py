"""`joules run --prometheus` (and `wrap`, which shares the option): /metrics for the live run,
held to the fake NVML's exact energy."""
import json
import shutil
import socket
import subprocess
import time

import pytest

from conftest import fake_gpus, joules, read_jsonl, truth_j, wait_for
from exporter_util import Process, one, parse, series

PROMTOOL = shutil.which("promtool")


def h100(watts, update_ms=0):
    return {"name": "NVIDIA H100 80GB HBM3", "architecture": "hopper", "latency_us": 20,
            "power": {"type": "constant", "watts": watts},
            "energy_counter": {"update_ms": update_ms, "phase_ms": 5}}


def start_record(path):
    def ready():
        return path.exists() and path.read_text().startswith("{")
    assert wait_for(ready, timeout=20)
    return json.loads(path.read_text().splitlines()[0])


# Live values come from the sampler's latest readings: a counter that advances every U ms is
# known to within about one update (U x power) between its steps; the run's final total, from
# accounting, is exact (test_run_nvml.py).  Tolerance: 3 updates of the node's power (the
# sampler's live estimate between counter steps), plus 2 J and 1 %.
@pytest.mark.parametrize("update_ms", [0, 20])
def test_live_run_metrics_match_the_scenarios_energy(tmp, procs, update_ms):
    scenario = {"devices": [h100(250, update_ms), h100(350, update_ms)]}
    env, epoch = fake_gpus(scenario)
    out = tmp / "run.jsonl"
    p = Process("run", "--prometheus", "0", "--run-id", "exp-7", "--label", "team=infra",
                "--interval", "50", "--output", out, "--", "sleep", "3", env=env)
    procs.append(p)
    assert p.address.startswith("127.0.0.1:")  # loopback unless a host is given
    start = start_record(out)
    time.sleep(1.5)
    text = p.scrape()
    m = parse(text)
    run = {"run_id": "exp-7", "hostname": start["hostname"], "team": "infra"}
    energy = one(m, "joules_run_energy_joules_total", **run)
    duration = one(m, "joules_run_duration_seconds", **run)
    assert 1.0 < duration < 3.0
    truth = sum(truth_j(scenario, i, epoch, start["start_monotonic_s"],
                        start["start_monotonic_s"] + duration) for i in range(2))
    tolerance = 3 * 600 * update_ms / 1000 + 2.0 + 0.01 * truth
    assert energy == pytest.approx(truth, abs=tolerance), (energy, truth)
    assert one(m, "joules_run_power_watts", **run) == pytest.approx(600, rel=1e-6)
    assert one(m, "joules_run_component_energy_joules_total", component="gpu", **run) == energy
    for i, d in enumerate(start["devices"]):
        gpu = dict(run, gpu=str(d["index"]), uuid=d["uuid"], model=d["name"])
        assert one(m, "joules_run_gpu_power_watts", **gpu) == (250, 350)[i]
        assert one(m, "joules_run_gpu_energy_joules_total", **gpu) > 0
        assert one(m, "joules_run_gpu_lost", **gpu) == 0
    assert one(m, "joules_run_finished", **run) == 0
    assert one(m, "joules_run_steps_total", **run) == 0
    assert series(m, "joules_run_info", subcommand="run", **run)
    assert one(m, "joules_up", **run) == 1
    if PROMTOOL:
        r = subprocess.run([PROMTOOL, "check", "metrics"], input=text.encode(),
                           capture_output=True, timeout=60)
        assert (r.returncode, r.stdout + r.stderr) == (0, b"")

    rc, stdout, err = p.stop()
    assert rc == 0, err
    assert stdout == ""
    end = read_jsonl(out)[-1]
    assert end["exporters"]["prometheus"]["address"] == p.address
    assert end["exporters"]["prometheus"]["scrapes"] == 1


def test_the_port_closes_with_the_run(tmp, procs):
    p = Process("run", "--backend", "sim", "--prometheus", "127.0.0.1:0", "--", "sleep", "0.5")
    procs.append(p)
    host, port = p.address.rsplit(":", 1)
    rc, _, err = p.stop()
    assert rc == 0, err
    with pytest.raises(OSError):
        socket.create_connection((host, int(port)), timeout=2).close()


def test_wrap_serves_the_same_metrics(tmp, procs):
    p = Process("wrap", "--backend", "sim", "--sim-gpus", "2", "--prometheus", "0", "--no-inline",
                "--", "sleep", "1.5")
    procs.append(p)
    time.sleep(0.8)
    m = parse(p.scrape())
    assert series(m, "joules_run_info", subcommand="wrap")
    assert one(m, "joules_run_steps_total") == 0
    assert len(series(m, "joules_run_gpu_energy_joules_total")) == 2
    rc, _, err = p.stop()
    assert rc == 0, err


@pytest.mark.parametrize("value,message", [
    ("nowhere", "--prometheus 'nowhere'"),
    ("70000", "--prometheus '70000'"),
    (":9400", "--prometheus ':9400'"),
])
def test_a_bad_address_fails_before_the_command_starts(tmp, value, message):
    marker = tmp / "started"
    r = joules("run", "--backend", "sim", "--prometheus", value, "--", "touch", marker)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr
    assert not marker.exists()


def test_a_port_in_use_fails_before_the_command_starts(tmp):
    marker = tmp / "started"
    out = tmp / "run.jsonl"
    out.write_text("keep\n")
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    try:
        r = joules("run", "--backend", "sim", "--prometheus", str(s.getsockname()[1]),
                   "--output", out, "--", "touch", marker)
    finally:
        s.close()
    assert r.returncode != 0
    assert "joules: error:" in r.stderr
    assert not marker.exists()
    assert out.read_text() == "keep\n"  # not truncated


def test_kwh_co2e_and_cost_follow_the_runs_energy_with_their_provenance(tmp, procs):
    env, _ = fake_gpus({"devices": [h100(300), h100(300)]})
    p = Process("run", "--prometheus", "0", "--run-id", "c-1", "--region", "DE", "--pue", "1.5",
                "--price-per-kwh", "0.3", "--currency", "EUR", "--", "sleep", "2", env=env)
    procs.append(p)
    time.sleep(1.0)
    m = parse(p.scrape())
    energy = one(m, "joules_run_energy_joules_total", run_id="c-1")
    kwh = one(m, "joules_run_energy_kwh_total", run_id="c-1")
    # Energy and its footprint come from the same rendering of the same readings.
    assert kwh == pytest.approx(energy * 1.5 / 3.6e6, rel=1e-9) and kwh > 0
    [(labels, co2e)] = series(m, "joules_run_co2e_grams_total", run_id="c-1")
    assert labels["region"] == "DE" and labels["year"] == "2024"
    assert labels["method"] == "country_average" and "Our World in Data" in labels["source"]
    assert co2e == pytest.approx(kwh * 344.1, rel=1e-9)
    assert one(m, "joules_run_cost_total", run_id="c-1", currency="EUR",
               source="--price-per-kwh") == pytest.approx(kwh * 0.3, rel=1e-9)
    assert one(m, "joules_pue", run_id="c-1", source="--pue") == 1.5
    assert one(m, "joules_carbon_intensity_grams_per_kwh", region="DE") == 344.1
    assert one(m, "joules_price_per_kwh", currency="EUR") == 0.3
    # The conftest points RAPL at an empty tree: CPU and DRAM are absent, not zero.
    assert one(m, "joules_component_status", component="gpu", status="measured") == 1
    assert one(m, "joules_component_status", component="cpu", status="absent") == 1
    assert one(m, "joules_component_status", component="cpu", status="measured") == 0
    # Without a region: kWh, but no CO2e and no intensity (unknown is not zero); no price, no cost.
    env, _ = fake_gpus({"devices": [h100(300)]})
    q = Process("run", "--prometheus", "0", "--components", "gpu", "--", "sleep", "2", env=env)
    procs.append(q)
    time.sleep(0.8)
    m = parse(q.scrape())
    assert one(m, "joules_run_energy_kwh_total") > 0
    assert one(m, "joules_pue", source="default") == 1
    for name in ("joules_run_co2e_grams_total", "joules_run_cost_total",
                 "joules_carbon_intensity_grams_per_kwh", "joules_price_per_kwh"):
        assert series(m, name) == [], name
    assert one(m, "joules_component_status", component="cpu", status="off") == 1
    assert one(m, "joules_component_status", component="dram", status="off") == 1
