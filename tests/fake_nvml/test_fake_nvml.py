"""Tests of the fake libnvidia-ml.so.1 against its README and scenario.py (run by CTest)."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import zlib

import pytest

import scenario as sc
from fake_nvml_ctypes import (DRIVER_NOT_LOADED, GPU_IS_LOST, INSUFFICIENT_SIZE, INVALID_ARGUMENT,
                              NO_PERMISSION, NOT_SUPPORTED, SUCCESS, TIMEOUT, UNINITIALIZED,
                              VARIANT_CUTOFF, PciInfo, def_symbols, library_path, load, session)

from conftest import VARIANTS, at, sample_times

c_uint, byref = ctypes.c_uint, ctypes.byref


# -- variants ----------------------------------------------------------------------------------

@pytest.mark.parametrize("variant", VARIANTS)
def test_variant_exports_exactly_its_levels(variant):
    assert library_path(variant).is_file()
    lib = load(variant)
    for level, name in def_symbols():
        assert hasattr(lib, name) == (level <= VARIANT_CUTOFF[variant]), name
    if shutil.which("nm") is None:
        pytest.skip("nm not installed")
    out = subprocess.run(["nm", "-D", "--defined-only", str(library_path(variant))],
                         capture_output=True, text=True, check=True).stdout
    exported = {line.split()[-1] for line in out.splitlines() if line.strip()}
    expected = {n for lv, n in def_symbols() if lv <= VARIANT_CUTOFF[variant]}
    assert exported == expected


def test_old_variants_lack_new_calls_and_report_old_versions():
    r390, r470 = load("r390"), load("r470")
    for name in ["nvmlInitWithFlags", "nvmlDeviceGetTotalEnergyConsumption",
                 "nvmlDeviceGetFieldValues", "nvmlDeviceGetArchitecture"]:
        assert not hasattr(r390, name)
    for name in ["nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetMemoryInfo_v2",
                 "nvmlGpmSampleGet", "nvmlDeviceGetCurrentClocksEventReasons"]:
        assert not hasattr(r470, name)
    with session({"devices": [{}]}, "r390") as s:
        assert s.string("nvmlSystemGetDriverVersion", None, 80) == (SUCCESS, "390.157")
    with session({"devices": [{}]}, "r470") as s:
        assert s.string("nvmlSystemGetDriverVersion", None, 80) == (SUCCESS, "470.256.02")


# -- the energy model against scenario.py -------------------------------------------------------

POWER_FUNCTIONS = {
    "constant": {"type": "constant", "watts": 437.5},
    "steps": {"type": "steps", "points": [[0.3, 120], [1.0, 650], [1.0, 500], [2.25, 90.5]]},
    "segments": {"type": "segments", "start_s": 0.2, "dt_s": 0.05,
                 "watts": [100 + (37 * i) % 600 for i in range(40)]},
    "linear": {"type": "linear", "points": [[0.1, 80], [0.9, 700], [1.7, 150.25], [2.5, 610]]},
    "square": {"type": "square", "low_w": 90, "high_w": 680, "period_s": 0.37, "duty": 0.3,
               "phase_s": 0.11},
}
COUNTERS = {
    "continuous": {"update_ms": 0},
    "20ms": {"update_ms": 20, "phase_ms": 7},
    "100ms": {"update_ms": 100, "phase_ms": 35, "initial_mj": 123456789},
}


@pytest.mark.parametrize("counter", COUNTERS)
@pytest.mark.parametrize("power", POWER_FUNCTIONS)
def test_counter_and_readings_match_scenario_py(clock, power, counter):
    spec = {"devices": [{
        "power": POWER_FUNCTIONS[power],
        "energy_counter": COUNTERS[counter],
        "power_usage": {"window_ms": 1000, "update_ms": 100},
        "power_instant": {"window_ms": 25, "update_ms": 100},
        "power_average": {"window_ms": 333, "update_ms": 0},
    }]}
    truth = sc.load(spec).devices[0]
    with session(spec, clock=clock) as s:
        h = s.h()
        for t_req in sample_times(3.0, 150, zlib.crc32(f"{power}/{counter}".encode())):
            t = at(clock, t_req)
            assert s.energy(h) == (SUCCESS, truth.counter_mj(t)), t
            assert s.uint("nvmlDeviceGetPowerUsage", h) == (SUCCESS, truth.power_usage_mw(t)), t
            f83, f191, f185, f186 = s.fields(h, [83, 191, 185, 186])
            assert f83.value.ullVal == f191.value.ullVal == truth.counter_mj(t)
            assert f185.value.uiVal == truth.power_average_mw(t)
            assert f186.value.uiVal == truth.power_instant_mw(t)
            assert [f.nvmlReturn for f in (f83, f191, f185, f186)] == [SUCCESS] * 4


def test_energy_is_the_exact_integral():
    # Closed forms checked by hand, independent of the implementation.
    d = sc.load({"devices": [{"power": POWER_FUNCTIONS["linear"]}]}).devices[0]
    assert d.energy_j(0.1) == pytest.approx(0.1 * 80)
    assert d.energy_j(0.9) == pytest.approx(0.1 * 80 + 0.8 * (80 + 700) / 2)
    sq = sc.load({"devices": [{"power": {"type": "square", "low_w": 100, "high_w": 300,
                                         "period_s": 1.0, "duty": 0.25}}]}).devices[0]
    assert sq.energy_j(10.0) == pytest.approx(10 * (0.25 * 300 + 0.75 * 100))
    assert sq.energy_j(0.1) == pytest.approx(30.0)
    seg = sc.load({"devices": [{"power": {"type": "segments", "start_s": 1, "dt_s": 0.5,
                                          "watts": [10, 20]}}]}).devices[0]
    assert seg.energy_j(3.0) == pytest.approx(1 * 10 + 0.5 * 10 + 0.5 * 20 + 1 * 20)


def test_default_readings_follow_the_architecture(clock):
    spec = {"devices": [{"architecture": "hopper", "power": POWER_FUNCTIONS["steps"]},
                        {"architecture": "volta", "power": POWER_FUNCTIONS["steps"]},
                        {"architecture": "pascal"}]}
    truth = sc.load(spec)
    with session(spec, clock=clock) as s:
        t = at(clock, 1.234)
        hopper, volta, pascal = s.h(0), s.h(1), s.h(2)
        # Hopper: 1 s average updated every 100 ms; Volta: instantaneous.
        assert s.uint("nvmlDeviceGetPowerUsage", hopper)[1] == truth.devices[0].power_usage_mw(t)
        assert truth.devices[0].power_usage.window_s == 1.0
        assert s.uint("nvmlDeviceGetPowerUsage", volta)[1] == 500000
        f185, f186 = s.fields(volta, [185, 186])
        assert (f185.nvmlReturn, f186.nvmlReturn) == (NOT_SUPPORTED, SUCCESS)
        assert s.energy(pascal)[0] == NOT_SUPPORTED  # energy counter: Volta and newer
        assert s.energy(volta)[0] == SUCCESS


def test_counter_follows_real_time():
    spec = {"devices": [{"power": {"type": "constant", "watts": 250}}]}
    truth = sc.load(spec).devices[0]
    epoch = time.monotonic_ns() - 2_000_000_000
    with session(spec, epoch_ns=epoch) as s:
        h = s.h()
        for _ in range(20):
            t0 = sc.time_s(time.monotonic_ns() - epoch)
            rc, value = s.energy(h)
            t1 = sc.time_s(time.monotonic_ns() - epoch)
            assert rc == SUCCESS and truth.counter_mj(t0) <= value <= truth.counter_mj(t1)
            time.sleep(0.01)


def test_counter_resets(clock):
    spec = {"devices": [{"power": {"type": "constant", "watts": 300},
                         "energy_counter": {"update_ms": 100, "initial_mj": 5000000},
                         "faults": [{"at_s": 2.05, "kind": "counter_reset"},
                                    {"at_s": 4.0, "kind": "counter_reset"}]}]}
    truth = sc.load(spec).devices[0]
    with session(spec, clock=clock) as s:
        h = s.h()
        assert s.energy(h)[1] == 5000000  # before the first update
        t = at(clock, 2.0)
        assert s.energy(h) == (SUCCESS, truth.counter_mj(t)) == (SUCCESS, 5000000 + 600000)
        t = at(clock, 2.09)
        assert s.energy(h) == (SUCCESS, truth.counter_mj(t))  # the reset is not seen yet
        t = at(clock, 2.15)
        assert s.energy(h) == (SUCCESS, truth.counter_mj(t)) == (SUCCESS, 15000)  # 50 ms after
        for t in sample_times(5.0, 50, 7):
            t = at(clock, t)
            assert s.energy(h) == (SUCCESS, truth.counter_mj(t))


# -- faults ------------------------------------------------------------------------------------

def test_faults(clock):
    spec = {"devices": [{"faults": [
        {"at_s": 1.0, "until_s": 2.0, "kind": "not_supported", "what": "energy"},
        {"at_s": 3.0, "until_s": 4.0, "kind": "error", "what": "power", "code": "TIMEOUT"},
        {"at_s": 6.0, "kind": "lost"}]}]}
    with session(spec, clock=clock) as s:
        h = s.h()
        at(clock, 1.5)
        assert s.energy(h)[0] == NOT_SUPPORTED
        assert s.uint("nvmlDeviceGetPowerUsage", h)[0] == SUCCESS
        assert [f.nvmlReturn for f in s.fields(h, [83, 186])] == [NOT_SUPPORTED, SUCCESS]
        at(clock, 2.0)
        assert s.energy(h)[0] == SUCCESS
        at(clock, 3.5)
        assert s.uint("nvmlDeviceGetPowerUsage", h)[0] == TIMEOUT
        assert [f.nvmlReturn for f in s.fields(h, [83, 185, 186])] == [SUCCESS, TIMEOUT, TIMEOUT]
        at(clock, 6.0)
        assert s.energy(h)[0] == GPU_IS_LOST
        assert s.string("nvmlDeviceGetName", h)[0] == GPU_IS_LOST
        assert s.call("nvmlDeviceGetHandleByIndex_v2", 0, byref(ctypes.c_void_p())) == GPU_IS_LOST
        at(clock, 100.0)
        assert s.uint("nvmlDeviceGetPowerUsage", h)[0] == GPU_IS_LOST


def test_latency_sleeps_without_burning_cpu(clock):
    spec = {"latency_us": 20000, "devices": [
        {"faults": [{"at_s": 1.0, "until_s": 2.0, "kind": "latency", "latency_us": 100000}]},
        {"latency_us": 0}]}
    with session(spec, clock=clock) as s:
        slow, fast = s.h(0), s.h(1)
        wall, cpu = time.monotonic(), time.process_time()
        for _ in range(10):
            assert s.energy(slow)[0] == SUCCESS
        wall, cpu = time.monotonic() - wall, time.process_time() - cpu
        assert wall >= 0.2 and cpu < 0.1, (wall, cpu)
        start = time.monotonic()
        for _ in range(10):
            s.energy(fast)
        assert time.monotonic() - start < 0.1  # the slow device took 0.2 s for as many
        at(clock, 1.5)
        start = time.monotonic()
        s.energy(slow)
        assert time.monotonic() - start >= 0.1


# -- library behaviour --------------------------------------------------------------------------

def test_permission_skip_keeps_the_count():
    spec = {"devices": [{}, {"permission": "no_permission"}, {}]}
    with session(spec) as s:
        n = c_uint()
        assert s.call("nvmlDeviceGetCount_v2", byref(n)) == SUCCESS and n.value == 3
        assert s.call("nvmlDeviceGetHandleByIndex_v2", 1, byref(ctypes.c_void_p())) == NO_PERMISSION
        assert s.string("nvmlDeviceGetUUID", s.h(2))[1].endswith("000000000002")
        uuid1 = sc.load(spec).devices[1].uuid.encode()
        assert s.call("nvmlDeviceGetHandleByUUID", uuid1, byref(ctypes.c_void_p())) == NO_PERMISSION


def test_init_is_reference_counted():
    lib = load("full")
    n = c_uint()
    os.environ.pop("FAKE_NVML_CLOCK_FILE", None)
    assert lib.nvmlDeviceGetCount_v2(byref(n)) == UNINITIALIZED
    os.environ["FAKE_NVML_SCENARIO"] = json.dumps({"devices": [{}, {}]})
    assert lib.nvmlInit_v2() == SUCCESS and lib.nvmlInitWithFlags(0) == SUCCESS
    h = ctypes.c_void_p()
    assert lib.nvmlDeviceGetHandleByIndex_v2(0, byref(h)) == SUCCESS
    assert lib.nvmlShutdown() == SUCCESS
    assert lib.nvmlDeviceGetCount_v2(byref(n)) == SUCCESS and n.value == 2
    assert lib.nvmlShutdown() == SUCCESS
    assert lib.nvmlDeviceGetCount_v2(byref(n)) == UNINITIALIZED
    assert lib.nvmlDeviceGetPowerUsage(h, byref(n)) == UNINITIALIZED
    assert lib.nvmlSystemGetDriverVersion(ctypes.create_string_buffer(80), 80) == UNINITIALIZED
    # nvml.h: no error when nvmlShutdown is called more often than nvmlInit.
    assert lib.nvmlShutdown() == SUCCESS
    assert lib.nvmlErrorString(GPU_IS_LOST) == b"GPU is lost"


def test_init_errors(tmp_path):
    lib = load("full")
    os.environ["FAKE_NVML_SCENARIO"] = json.dumps({"init_error": "NO_PERMISSION", "devices": []})
    assert lib.nvmlInit_v2() == NO_PERMISSION
    n = c_uint()
    assert lib.nvmlDeviceGetCount_v2(byref(n)) == UNINITIALIZED
    script = textwrap.dedent(f"""
        import ctypes
        lib = ctypes.CDLL({str(library_path())!r})
        print(lib.nvmlInit_v2(), lib.nvmlInit(), flush=True)
    """)
    for value, why in [(None, "FAKE_NVML_SCENARIO is not set"),
                       (str(tmp_path / "missing.json"), "cannot read the scenario file"),
                       ('{"devices": [{"powr": {}}]}', "devices[0].powr is not a known key"),
                       ('{"devices": [{"power": {"type": "ramp"}}]}', "must be constant")]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_NVML")}
        if value is not None:
            env["FAKE_NVML_SCENARIO"] = value
        r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
        assert r.stdout.split() == [str(DRIVER_NOT_LOADED)] * 2
        assert why in r.stderr and r.stderr.count("fake_nvml:") == 1, r.stderr


def test_string_sizes_and_identity():
    spec = {"devices": [{"name": "NVIDIA A100-SXM4-40GB", "architecture": "ampere",
                         "pci_bus_id": "00000000:3B:00.0"}]}
    with session(spec) as s:
        h = s.h()
        name = "NVIDIA A100-SXM4-40GB"
        assert s.string("nvmlDeviceGetName", h, len(name)) == (INSUFFICIENT_SIZE, "")
        assert s.string("nvmlDeviceGetName", h, len(name) + 1) == (SUCCESS, name)
        assert s.string("nvmlSystemGetDriverVersion", None, 5)[0] == INSUFFICIENT_SIZE
        pci = PciInfo()
        assert s.call("nvmlDeviceGetPciInfo_v3", h, byref(pci)) == SUCCESS
        assert (pci.busId, pci.busIdLegacy, pci.bus) == (b"00000000:3B:00.0", b"0000:3B:00.0", 0x3B)
        other = ctypes.c_void_p()
        assert s.call("nvmlDeviceGetHandleByPciBusId_v2", b"0000:3b:00.0", byref(other)) == SUCCESS
        assert other.value == h.value
        arch, major, minor = c_uint(), ctypes.c_int(), ctypes.c_int()
        assert s.call("nvmlDeviceGetArchitecture", h, byref(arch)) == SUCCESS and arch.value == 7
        assert s.call("nvmlDeviceGetCudaComputeCapability", h, byref(major), byref(minor)) == 0
        assert (major.value, minor.value) == (8, 0)
        garbage = ctypes.c_void_p(h.value + 1)
        assert s.uint("nvmlDeviceGetPowerUsage", garbage)[0] == INVALID_ARGUMENT
