"""`joules run` against the fake HLML (tests/fake_hlml): joules' real Intel Gaudi code path, held
to exact truth as test_run_amd.py holds AMD's."""
import json
import signal

import pytest

from conftest import EDGE_SLACK, NO_LIBRARY, fake_gaudi, joules
from exporter_util import one, parse, serve, series
from vendor_run import assert_exact, assert_kept_until_lost, random_segments, run_records


def gaudi(power, **extra):
    d = {"name": "HL-225", "latency_us": 20, "power": power}
    d.update(extra)
    return d


def run_json(scenario, *args, **kw):
    return run_records(*fake_gaudi(scenario), *args, **kw)


@pytest.mark.timing
@pytest.mark.parametrize("counter", [{"update_ms": 10}, {"update_ms": 100, "phase_ms": 37}])
def test_total_energy_from_the_millijoule_counter_is_exact_to_a_tenth_of_a_percent(counter):
    scenario = {"devices": [gaudi({"type": "constant", "watts": 420}, energy_counter=counter),
                            gaudi(random_segments(3), energy_counter=counter)]}
    # 10 s, as test_run_amd.py's twin: the sampler's first reading after the run's end can come
    # late on a loaded machine.
    r, records, epoch = run_json(scenario, cmd=("sleep", "10"))
    assert r.returncode == 0, r.stderr
    start, end = records
    assert start["backend"] == "hlml"
    assert [d["vendor"] for d in start["devices"]] == ["intel", "intel"]
    assert [d["name"] for d in start["devices"]] == ["HL-225", "HL-225"]
    assert start["devices"][0]["power_source"] == "power_usage"
    assert end["method"] == "counter"
    assert_exact(scenario, records, epoch)


def test_without_a_counter_power_usage_is_integrated():
    scenario = {"devices": [gaudi({"type": "constant", "watts": 350},
                                  energy_counter={"supported": False})]}
    r, records, epoch = run_json(scenario, cmd=("sleep", "3"))
    assert r.returncode == 0, r.stderr
    end = records[-1]
    assert end["method"] == "polled"
    assert end["devices"][0]["energy_j"] == pytest.approx(350.0 * end["duration_s"], rel=0.02)


@pytest.mark.timing
def test_a_device_lost_mid_run_keeps_the_energy_known_until_then():
    scenario = {"devices": [gaudi({"type": "constant", "watts": 300}),
                            gaudi({"type": "constant", "watts": 400},
                                  faults=[{"at_s": 11.0, "kind": "lost"}])]}
    r, records, epoch = run_json(scenario, cmd=("sleep", "2"))
    assert r.returncode == 0, r.stderr
    end = records[-1]
    assert end["status"] == "measurement_degraded"
    lost = end["devices"][1]
    assert lost["lost_at_s"] == pytest.approx(11.0 - (end["start_monotonic_s"] - epoch / 1e9),
                                              abs=0.15)
    assert_kept_until_lost(lost, 400.0)
    assert end["devices"][0]["energy_j"] == pytest.approx(300.0 * end["duration_s"],
                                                          rel=1e-3 * EDGE_SLACK)
    assert any("Intel GPU 1 stopped reporting" in d for d in end["degradations"])


def test_a_device_lost_before_the_start_is_listed_as_lost():
    scenario = {"devices": [gaudi({"type": "constant", "watts": 300}),
                            gaudi({"type": "constant", "watts": 400},
                                  faults=[{"at_s": 0, "kind": "lost"}])]}
    r, records, epoch = run_json(scenario, cmd=("sleep", "1"))
    assert r.returncode == 0, r.stderr
    start, end = records
    assert [d["index"] for d in start["devices"]] == [0, 1]
    assert end["status"] == "measurement_degraded"
    lost = end["devices"][1]
    assert lost["lost_at_s"] == 0 and lost["energy_j"] is None
    assert any("Intel GPU 1 was lost before the start" in d and "HLML_ERROR_AIP_IS_LOST" in d
               for d in end["degradations"])


def test_hlml_named_but_missing_is_one_line_naming_the_library():
    env, _ = fake_gaudi({"devices": []})
    env["JOULES_HLML_LIBRARY"] = NO_LIBRARY
    r = joules("run", "--backend", "hlml", "--", "true", env=env)
    assert r.returncode == 125
    assert len(r.stderr.splitlines()) == 1, r.stderr
    assert "HLML" in r.stderr and "no-such-library.so" in r.stderr and "JOULES_HLML_LIBRARY" in r.stderr


def test_no_gpu_library_at_all_names_hlml_beside_the_others():
    env, _ = fake_gaudi({"devices": []})
    env["JOULES_HLML_LIBRARY"] = NO_LIBRARY
    r = joules("run", "--", "true", env=env)
    assert r.returncode == 125
    assert len(r.stderr.splitlines()) == 1, r.stderr
    for part in ("found no GPU library", "AMD SMI", "Level Zero", "HLML", "JOULES_HLML_LIBRARY",
                 "--backend sim"):
        assert part in r.stderr, part


def test_hlml_init_failure_says_why():
    env, _ = fake_gaudi({"init_error": "DRIVER_NOT_LOADED", "devices": [gaudi({})]})
    r = joules("run", "--", "true", env=env)
    assert r.returncode == 125 and len(r.stderr.splitlines()) == 1, r.stderr
    assert "hlml_init failed" in r.stderr and "habanalabs kernel driver" in r.stderr


def test_a_device_name_from_the_library_is_escaped_on_the_terminal():
    scenario = {"devices": [gaudi({"type": "constant", "watts": 300}, name="HL\x1b[31m-225")]}
    env, _ = fake_gaudi(scenario)
    r = joules("monitor", "--once", env=env)
    assert r.returncode == 0, r.stderr
    assert "\x1b[31m" not in r.stdout


def test_monitor_shows_the_device_as_intel_with_its_health():
    scenario = {"devices": [gaudi({"type": "constant", "watts": 450},
                                  health={"utilization": 64, "aip_c": 57})]}
    env, _ = fake_gaudi(scenario)
    r = joules("monitor", "--json", "--interval", "100", "--once", env=env)
    assert r.returncode == 0, r.stderr
    (d,) = json.loads(r.stdout.splitlines()[-1])["devices"]
    assert d["vendor"] == "intel" and d["method"] == "counter" and not d["lost"]
    assert d["power_w"] == 450 and d["gpu_util_percent"] == 64 and d["temperature_c"] == 57
    r = joules("monitor", "--plain", "--interval", "100", "--once", env=env)
    assert r.returncode == 0, r.stderr
    assert " intel0 " in r.stdout


def test_serve_labels_every_series_with_the_vendor(procs):
    env, _ = fake_gaudi({"devices": [gaudi({"type": "constant", "watts": 450}),
                                     gaudi({"type": "constant", "watts": 450})]})
    p = serve("--interval", "100", env=env)
    procs.append(p)
    m = parse(p.scrape())
    assert len(series(m, "joules_gpu_info", vendor="intel")) == 2
    assert one(m, "joules_gpu_power_watts", vendor="intel", gpu="1") == 450
    rc, _, err = p.stop(signal.SIGTERM)
    assert rc == 0, err


def test_doctor_names_the_library_and_lists_each_device():
    env, _ = fake_gaudi({"devices": [gaudi({"type": "constant", "watts": 450})]})
    r = joules("doctor", "--json", env=env)
    assert r.returncode == 0, r.stdout
    rep = json.loads(r.stdout)
    assert rep["backend"]["name"] == "hlml"
    (g,) = rep["gpus"]
    assert g["vendor"] == "intel" and g["method"] == "counter" and g["power_source"] == "power_usage"
    assert {"utilization", "memory", "temperature", "clocks"} <= set(g["health_readings"])
    r = joules("doctor", env=env)
    assert "HLML\n" in r.stdout and "Intel GPU 0  HL-225" in r.stdout
    assert "hlml_device_get_power_usage" in r.stdout and "nvml" not in r.stdout


def test_doctor_points_a_slow_gaudi_at_hl_smi_and_the_habanalabs_log():
    # Device 1 answers each HLML call after 100 ms: a slow driver, with Habana's tools as the fix.
    env, _ = fake_gaudi({"devices": [gaudi({"type": "constant", "watts": 450}),
                                     gaudi({"type": "constant", "watts": 450}, latency_us=100_000)]})
    r = joules("doctor", "--json", env=env)
    rep = json.loads(r.stdout)
    (slow,) = [f for f in rep["findings"] if f["code"] == "slow_driver"]
    assert slow["gpu"] == 1
    assert "hl-smi" in slow["fix"] and "habanalabs" in slow["fix"] and "xpu-smi" not in slow["fix"]


@pytest.mark.parametrize("selector", ["1", "intel:1", "01-01-gaudi-0000-0000-00000000",
                                      "0000:29:00.0"])
def test_gpus_picks_a_device_by_index_uuid_or_pci_address(selector):
    env, _ = fake_gaudi({"devices": [gaudi({"type": "constant", "watts": 300}),
                                     gaudi({"type": "constant", "watts": 400})]})
    r = joules("monitor", "--json", "--once", "--gpus", selector, env=env)
    assert r.returncode == 0, r.stderr
    assert [d["index"] for d in json.loads(r.stdout.splitlines()[-1])["devices"]] == [1]


def test_intel_gpu_visibility_variables_leave_gaudi_devices_alone():
    # HLML lists what the Habana container runtime left the container (docs/hlml-notes.md §5);
    # Level Zero's ZE_AFFINITY_MASK is about Intel GPUs, not Gaudi.
    env, _ = fake_gaudi({"devices": [gaudi({"type": "constant", "watts": 300}),
                                     gaudi({"type": "constant", "watts": 400})]})
    env["ZE_AFFINITY_MASK"] = "0"
    r = joules("monitor", "--json", "--once", env=env)
    assert r.returncode == 0, r.stderr
    assert [d["index"] for d in json.loads(r.stdout.splitlines()[-1])["devices"]] == [0, 1]
