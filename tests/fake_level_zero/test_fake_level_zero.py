"""Tests of the fake libze_loader.so.1 against its README and tests/fake_common/power.py, at exact
scenario instants (FAKE_ZE_CLOCK_FILE).  Each test runs its own python3, since Sysman is
initialised once per process."""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
BUILD = pathlib.Path(os.environ.get("JOULES_TEST_BUILD_DIR", ROOT / "build" / "dev"))
DEF = ROOT / "src" / "backends" / "levelzero" / "ze_symbols.def"
CUTOFF = {"full": 1_000_000, "legacy": 104}

# Reads a device's domains and counters at given instants; prints JSON.
PROBE = textwrap.dedent("""
    import ctypes, json, os, struct, sys
    lib = ctypes.CDLL(sys.argv[1])
    clock = sys.argv[2]
    def at(t):
        open(clock, "wb").write(struct.pack("=q", int(round(t * 1e9))))
        return int(round(t * 1e9)) / 1e9
    at(0.0)
    out = {"init": lib.zesInit(0) if hasattr(lib, "zesInit") else None}
    if out["init"] != 0:
        out["core"] = lib.zeInit(0)
        get_drivers, get_devices = lib.zeDriverGet, lib.zeDeviceGet
    else:
        get_drivers, get_devices = lib.zesDriverGet, lib.zesDeviceGet
    n = ctypes.c_uint32(0)
    out["drivers_rc"] = get_drivers(ctypes.byref(n), None)
    drivers = (ctypes.c_void_p * max(n.value, 1))()
    get_drivers(ctypes.byref(n), drivers)
    k = ctypes.c_uint32(0)
    get_devices(ctypes.c_void_p(drivers[0]), ctypes.byref(k), None)
    devices = (ctypes.c_void_p * max(k.value, 1))()
    get_devices(ctypes.c_void_p(drivers[0]), ctypes.byref(k), devices)
    out["devices"] = k.value
    m = ctypes.c_uint32(0)
    out["domains_rc"] = lib.zesDeviceEnumPowerDomains(ctypes.c_void_p(devices[0]), ctypes.byref(m), None)
    domains = (ctypes.c_void_p * max(m.value, 1))()
    lib.zesDeviceEnumPowerDomains(ctypes.c_void_p(devices[0]), ctypes.byref(m), domains)
    out["readings"] = []
    for t in json.loads(sys.argv[3]):
        t = at(t)
        row = []
        for d in domains[:m.value]:
            e = (ctypes.c_uint64 * 2)()
            rc = lib.zesPowerGetEnergyCounter(ctypes.c_void_p(d), e)
            row.append([rc, e[0], e[1]])
        out["readings"].append([t, row])
    print(json.dumps(out))
""")


def probe(tmp_path, scenario, times, variant="full", sysman_env=False):
    env = dict(os.environ, FAKE_ZE_SCENARIO=json.dumps(scenario),
               FAKE_ZE_CLOCK_FILE=str(tmp_path / "clock"))
    env.pop("ZES_ENABLE_SYSMAN", None)
    if sysman_env:
        env["ZES_ENABLE_SYSMAN"] = "1"
    lib = BUILD / "tests" / "fake_level_zero" / variant / "libze_loader.so.1"
    r = subprocess.run([sys.executable, "-c", PROBE, str(lib), str(tmp_path / "clock"),
                        json.dumps(times)], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def expected_uj(spec, t, share=1):
    sys.path.insert(0, str(ROOT / "tests" / "fake_common"))
    import power  # tests/fake_common/power.py

    c = spec.get("energy_counter", {})
    q = power.counter_instant(t, c.get("update_ms", 0) / 1000.0, c.get("phase_ms", 0) / 1000.0)
    e = power.PowerDevice(spec, 10**9).energy_j(q)
    return (c.get("initial_uj", 0) // share + max(int(e * 1e6 // share), 0)) % 2**64


@pytest.mark.parametrize("variant", CUTOFF)
def test_each_variant_exports_exactly_its_spec_levels(variant):
    expected = {m.group(2) for m in re.finditer(r"^JOULES_ZE_FN\(([0-9]+), *[^,]+, *(\w+),",
                                                DEF.read_text(), re.M)
                if int(m.group(1)) <= CUTOFF[variant]}
    if shutil.which("nm") is None:
        pytest.skip("nm not installed")
    lib = BUILD / "tests" / "fake_level_zero" / variant / "libze_loader.so.1"
    out = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True,
                         text=True, check=True).stdout
    assert {line.split()[-1] for line in out.splitlines() if line.strip()} == expected


@pytest.mark.parametrize("spec", [
    {"power": {"type": "square", "low_w": 90, "high_w": 600, "period_s": 0.37, "duty": 0.3}},
    {"power": {"type": "linear", "points": [[0.1, 80], [0.9, 600], [2.5, 410]]},
     "energy_counter": {"update_ms": 100, "phase_ms": 35, "initial_uj": 2**64 - 700_000}},
    {"stacks": 2, "power": {"type": "constant", "watts": 333},
     "energy_counter": {"domains": "stacks"}},
])
def test_the_counters_are_microjoules_of_the_scenario_s_energy(tmp_path, spec):
    times = [0.0, 0.05, 0.3711, 1.0, 1.2345, 2.0, 3.5]
    out = probe(tmp_path, {"devices": [spec]}, times)
    shares = spec.get("stacks", 1) if spec.get("energy_counter", {}).get("domains") == "stacks" else 1
    for t, row in out["readings"]:
        assert len(row) == shares
        for rc, energy, timestamp in row:
            assert rc == 0 and energy == expected_uj(spec, t, shares), t
            assert timestamp == int(t * 1e6)


def test_sysman_through_zeinit_needs_zes_enable_sysman(tmp_path):
    spec = {"power": {"type": "constant", "watts": 200}}
    out = probe(tmp_path, {"devices": [spec]}, [1.0], variant="legacy")
    assert out["init"] is None and out["core"] == 0
    assert out["domains_rc"] == 0x78000001  # ZE_RESULT_ERROR_UNINITIALIZED: no Sysman
    out = probe(tmp_path, {"devices": [spec]}, [1.0], variant="legacy", sysman_env=True)
    assert out["domains_rc"] == 0 and out["readings"][0][1][0][1] == expected_uj(spec, 1.0)


def test_a_lost_device_answers_device_lost(tmp_path):
    spec = {"faults": [{"at_s": 1.0, "kind": "lost"}]}
    out = probe(tmp_path, {"devices": [spec]}, [0.5, 1.0])
    assert [row[0][0] for _, row in out["readings"]] == [0, 0x70000001]
