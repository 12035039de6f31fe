"""Every subcommand on AMD and Intel GPUs (the fake AMD SMI and Level Zero loader): wrap, monitor,
serve and doctor work as they do on NVIDIA's, each GPU with its vendor."""
import json
import signal
import sys

import pytest

from conftest import ROOT, fake_amd, fake_gpus, fake_intel, joules, read_jsonl, wait_for
from exporter_util import one, parse, serve, series

PY_TRAINER = ROOT / "tests" / "cli" / "children" / "py_trainer.py"


def amd(**extra):
    d = {"name": "AMD Instinct MI300X", "latency_us": 20, "power": {"type": "constant", "watts": 550},
         "health": {"gfx_activity": 87, "hotspot_c": 61, "vram_used_mb": 4096}}
    d.update(extra)
    return d


def intel(**extra):
    d = {"latency_us": 20, "stacks": 2, "power": {"type": "constant", "watts": 480},
         "health": {"utilization_percent": 75, "temperature_c": 58}}
    d.update(extra)
    return d


VENDORS = {"amd": (fake_amd, amd), "intel": (fake_intel, intel)}


@pytest.mark.parametrize("vendor", VENDORS)
def test_wrap_splits_the_energy_into_steps(tmp, vendor):
    make_env, device = VENDORS[vendor]
    env, _ = make_env({"devices": [device(), device()]})
    out = tmp / "run.jsonl"
    r = joules("wrap", "-q", "--no-inline", "--output", out, "--", sys.executable, PY_TRAINER,
               "--steps", "8", "--step-ms", "150", env=env)
    assert r.returncode == 0, r.stderr
    records = read_jsonl(out)
    steps = [x for x in records if x["type"] == "step"]
    end = records[-1]
    assert len(steps) >= 6 and end["wrap"]["conserved"] is True
    assert end["method"] == "counter"
    watts = 550 if vendor == "amd" else 480
    for s in steps:
        assert s["energy_j"] == pytest.approx(2 * watts * s["duration_s"], rel=0.02)
        assert len(s["gpus"]) == 2


@pytest.mark.parametrize("vendor", VENDORS)
def test_monitor_shows_each_gpu_with_its_vendor(vendor):
    make_env, device = VENDORS[vendor]
    env, _ = make_env({"devices": [device()]})
    r = joules("monitor", "--json", "--interval", "100", "--once", env=env)
    assert r.returncode == 0, r.stderr
    (d,) = json.loads(r.stdout.splitlines()[-1])["devices"]
    assert d["vendor"] == vendor and d["method"] == "counter" and not d["lost"]
    if vendor == "amd":
        assert d["power_w"] == 550 and d["gpu_util_percent"] == 87
        assert d["temperature_c"] == 61 and d["memory_used_bytes"] == 4096 << 20
    else:
        # A rate of the engines' active time between two health readings.
        assert d["gpu_util_percent"] == 75 and d["temperature_c"] == 58
    r = joules("monitor", "--plain", "--interval", "100", "--once", env=env)
    assert r.returncode == 0, r.stderr
    assert f" {vendor}0 " in r.stdout


@pytest.mark.parametrize("vendor", VENDORS)
def test_serve_labels_every_series_with_the_vendor(procs, vendor):
    make_env, device = VENDORS[vendor]
    env, _ = make_env({"devices": [device(), device()]})
    p = serve("--hostname", "node-a", "--interval", "100", env=env)
    procs.append(p)
    scraped = {}

    def read():
        scraped["m"] = parse(p.scrape())
        return series(scraped["m"], "joules_gpu_energy_joules_total")

    assert wait_for(read, timeout=10.0, step=0.05)
    m = scraped["m"]
    info = series(m, "joules_gpu_info", vendor=vendor)
    assert len(info) == 2 and info[0][0]["driver_version"]
    energy = series(m, "joules_gpu_energy_joules_total", vendor=vendor, hostname="node-a")
    assert len(energy) == 2
    if vendor == "amd":
        assert one(m, "joules_gpu_power_watts", vendor="amd", gpu="1") == 550
    else:
        # Level Zero has no power reading: the energy counter's rate is Prometheus' to take.
        assert not series(m, "joules_gpu_power_watts")
    rc, _, err = p.stop(signal.SIGTERM)
    assert rc == 0, err


def test_doctor_on_amd_reports_the_library_and_a_gpu_with_ecc_errors():
    env, _ = fake_amd({"devices": [amd(), amd(health={"ecc_uncorrectable": 2})]})
    r = joules("doctor", "--json", env=env)
    assert r.returncode == 2, r.stdout
    rep = json.loads(r.stdout)
    assert rep["backend"]["name"] == "amdsmi"
    assert rep["backend"]["libraries"][0]["library_version"] == "24.7.0"
    assert [g["vendor"] for g in rep["gpus"]] == ["amd", "amd"]
    assert "ecc_errors" in rep["gpus"][0]["health_readings"]
    (critical,) = [f for f in rep["findings"] if f["severity"] == "critical"]
    assert critical["code"] == "ecc_uncorrectable" and critical["gpu"] == 1
    assert critical["message"].startswith("AMD GPU 1:")
    r = joules("doctor", env=env)
    assert "AMD SMI\n" in r.stdout and "AMD GPU 1  AMD Instinct MI300X" in r.stdout
    assert "CUDA devices" not in r.stdout


def test_doctor_on_intel_is_healthy_and_names_the_sysman_path():
    env, _ = fake_intel({"devices": [intel()]})
    r = joules("doctor", "--json", env=env)
    assert r.returncode == 0, r.stdout
    rep = json.loads(r.stdout)
    assert rep["backend"]["libraries"][0]["library_version"] == "zesInit"
    (g,) = rep["gpus"]
    assert g["vendor"] == "intel" and g["method"] == "counter" and g["power_source"] == "none"
    assert {"temperature", "clocks", "memory"} <= set(g["health_readings"])


def test_doctor_on_a_node_of_two_vendors_lists_both_libraries():
    env, _ = fake_gpus({"devices": [{"latency_us": 20}]})
    amd_env, _ = fake_amd({"devices": [amd()]})
    amd_env.pop("JOULES_NVML_LIBRARY")
    r = joules("doctor", "--json", env={**env, **amd_env})
    rep = json.loads(r.stdout)
    assert rep["backend"]["name"] == "nvml+amdsmi"
    assert [x["name"] for x in rep["backend"]["libraries"]] == ["nvml", "amdsmi"]
    assert [(g["vendor"], g["index"]) for g in rep["gpus"]] == [("nvidia", 0), ("amd", 0)]


@pytest.mark.parametrize("vendor", VENDORS)
def test_a_gpu_lost_before_the_start_is_lost_in_monitor_serve_and_doctor(procs, vendor):
    # GPU 1 answers every call with its vendor's "not found" / "device lost" from before joules
    # starts: it is listed from the first moment, lost, as on NVIDIA's.
    make_env, device = VENDORS[vendor]
    env, _ = make_env({"devices": [device(), device(faults=[{"at_s": 0, "kind": "lost"}])]})
    r = joules("monitor", "--json", "--interval", "100", "--once", env=env)
    assert r.returncode == 0, r.stderr
    sample = json.loads(r.stdout.splitlines()[-1])
    assert [d["index"] for d in sample["devices"]] == [0, 1]
    assert sample["node"]["lost_gpus"] == [1]
    ok, lost = sample["devices"]
    assert not ok["lost"] and ok["energy_j"] is not None
    assert lost["lost"] and lost["energy_j"] is None and lost["vendor"] == vendor
    assert [f["code"] for f in lost["findings"]] == ["gpu_lost"]

    p = serve("--interval", "100", env=env)
    procs.append(p)
    m = parse(p.scrape())
    assert one(m, "joules_gpu_lost", gpu="0", vendor=vendor) == 0
    assert one(m, "joules_gpu_lost", gpu="1", vendor=vendor) == 1
    assert series(m, "joules_gpu_energy_joules_total", gpu="1") == []
    assert one(m, "joules_up") == 0
    rc, _, err = p.stop(signal.SIGTERM)
    assert rc == 0, err

    r = joules("doctor", "--json", env=env)
    assert r.returncode == 2, r.stdout
    rep = json.loads(r.stdout)
    assert [(g["index"], g["lost"]) for g in rep["gpus"]] == [(0, False), (1, True)]
    (finding,) = [f for f in rep["findings"] if f["code"] == "gpu_lost"]
    assert finding["gpu"] == 1 and finding["severity"] == "critical"
