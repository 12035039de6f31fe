"""Tests of the fake libhlml.so against its README and tests/fake_common/power.py, at exact
scenario instants (FAKE_HLML_CLOCK_FILE)."""

from __future__ import annotations

import ctypes
import json
import math
import os
import pathlib
import re
import shutil
import struct
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tests" / "fake_common"))
import power  # noqa: E402  (tests/fake_common/power.py)

BUILD = pathlib.Path(os.environ.get("JOULES_TEST_BUILD_DIR", ROOT / "build" / "dev"))
LIB = BUILD / "tests" / "fake_hlml" / "libhlml.so"
DEF = ROOT / "src" / "backends" / "hlml" / "hlml_symbols.def"
SUCCESS, INVALID_ARGUMENT, NOT_SUPPORTED, DRIVER_NOT_LOADED, TIMEOUT, AIP_IS_LOST = 0, 2, 3, 9, 10, 15
byref = ctypes.byref


class Session:
    """One process-wide session of the fake: a scenario, a clock file, the library."""

    def __init__(self, tmp: pathlib.Path, scenario: dict):
        self.clock = tmp / "clock"
        self.clock.write_bytes(struct.pack("=q", 0))
        os.environ["FAKE_HLML_SCENARIO"] = json.dumps(scenario)
        os.environ["FAKE_HLML_CLOCK_FILE"] = str(self.clock)
        self.lib = ctypes.CDLL(str(LIB))
        self.rc = self.lib.hlml_init()

    def at(self, t: float) -> float:
        ns = int(round(t * 1e9))
        self.clock.write_bytes(struct.pack("=q", ns))
        return ns / 1e9

    def handles(self) -> list[int]:
        n = ctypes.c_uint(0)
        assert self.lib.hlml_device_get_count(byref(n)) == SUCCESS
        out = []
        for i in range(n.value):
            h = ctypes.c_void_p()
            assert self.lib.hlml_device_get_handle_by_index(ctypes.c_uint(i), byref(h)) == SUCCESS
            out.append(h)
        return out

    def energy(self, h) -> tuple[int, int]:
        mj = ctypes.c_ulonglong(0)
        rc = self.lib.hlml_device_get_total_energy_consumption(h, byref(mj))
        return rc, mj.value

    def power(self, h) -> tuple[int, int]:
        mw = ctypes.c_uint(0)
        rc = self.lib.hlml_device_get_power_usage(h, byref(mw))
        return rc, mw.value

    def close(self):
        if self.rc == SUCCESS:
            self.lib.hlml_shutdown()


@pytest.fixture
def session(tmp_path):
    opened = []

    def make(scenario):
        s = Session(tmp_path, scenario)
        opened.append(s)
        return s

    yield make
    for s in opened:
        s.close()


def test_the_library_exports_exactly_its_list():
    expected = {m.group(1) for m in re.finditer(r"^JOULES_HLML_FN\([0-9]+, *[^,]+, *(\w+),",
                                                DEF.read_text(), re.M)}
    if shutil.which("nm") is None:
        pytest.skip("nm not installed")
    out = subprocess.run(["nm", "-D", "--defined-only", str(LIB)], capture_output=True,
                         text=True, check=True).stdout
    assert {line.split()[-1] for line in out.splitlines() if line.strip()} == expected


def expected_mj(spec: dict, t: float) -> int:
    d = power.PowerDevice(spec, 10**9)
    c = spec.get("energy_counter", {})
    q = power.counter_instant(t, c.get("update_ms", 10.0) / 1000.0, c.get("phase_ms", 0.0) / 1000.0)
    return c.get("initial_mj", 0) + max(math.floor(d.energy_j(q) * 1000.0), 0)


@pytest.mark.parametrize("spec", [
    {"power": {"type": "square", "low_w": 90, "high_w": 580, "period_s": 0.37, "duty": 0.3}},
    {"power": {"type": "linear", "points": [[0.1, 80], [0.9, 600], [2.5, 410]]},
     "energy_counter": {"update_ms": 100, "phase_ms": 35, "initial_mj": 123456789}},
])
def test_the_counter_counts_millijoules_at_its_updates(session, spec):
    s = session({"devices": [spec]})
    assert s.rc == SUCCESS
    (h,) = s.handles()
    for when in [0.0, 0.05, 0.3711, 1.0, 1.2345, 2.0, 3.5]:
        t = s.at(when)
        assert s.energy(h) == (SUCCESS, expected_mj(spec, t)), when


def test_power_usage_is_the_power_function_in_milliwatts(session):
    spec = {"power": {"type": "linear", "points": [[0.0, 100], [1.0, 500]]}}
    s = session({"devices": [spec]})
    (h,) = s.handles()
    d = power.PowerDevice(spec, 10**9)
    for when in [0.0, 0.25, 0.5001, 1.0]:
        t = s.at(when)
        assert s.power(h) == (SUCCESS, round(d.watts(t) * 1000)), when


def test_identity_and_health_follow_the_scenario(session):
    s = session({"devices": [{"name": "HL-325L", "uuid": "01-abc", "pci_bus_id": "0000:4d:00.0",
                              "health": {"utilization": 37, "aip_c": 51, "soc_mhz": 1600}}]})
    (h,) = s.handles()
    buf = ctypes.create_string_buffer(64)
    assert s.lib.hlml_device_get_name(h, buf, 64) == SUCCESS and buf.value == b"HL-325L"
    assert s.lib.hlml_device_get_uuid(h, buf, 64) == SUCCESS and buf.value == b"01-abc"
    assert s.lib.hlml_device_get_name(h, buf, 4) != SUCCESS  # too short for the name
    pci = ctypes.create_string_buffer(512)
    assert s.lib.hlml_device_get_pci_info(h, pci) == SUCCESS
    assert pci.raw[4:16] == b"0000:4d:00.0"
    util = ctypes.c_uint(0)
    assert s.lib.hlml_device_get_utilization_rates(h, byref(util)) == SUCCESS and util.value == 37
    temp = ctypes.c_uint(0)
    assert s.lib.hlml_device_get_temperature(h, 0, byref(temp)) == SUCCESS and temp.value == 51
    mhz = ctypes.c_uint(0)
    assert s.lib.hlml_device_get_clock_info(h, 0, byref(mhz)) == SUCCESS and mhz.value == 1600


def test_a_lost_device_answers_aip_is_lost_from_its_fault_on(session):
    s = session({"devices": [{"faults": [{"at_s": 1.0, "kind": "lost"}]}]})
    (h,) = s.handles()
    s.at(0.5)
    assert s.energy(h)[0] == SUCCESS and s.power(h)[0] == SUCCESS
    s.at(1.0)
    assert s.energy(h)[0] == AIP_IS_LOST and s.power(h)[0] == AIP_IS_LOST
    buf = ctypes.create_string_buffer(64)
    assert s.lib.hlml_device_get_name(h, buf, 64) == SUCCESS  # from the driver's cache


def test_unsupported_readings_and_error_faults(session):
    s = session({"devices": [{"energy_counter": {"supported": False}},
                             {"faults": [{"at_s": 0.2, "until_s": 0.4, "kind": "error",
                                          "what": "power", "code": "TIMEOUT"}]}]})
    a, b = s.handles()
    assert s.energy(a)[0] == NOT_SUPPORTED and s.power(a)[0] == SUCCESS
    s.at(0.3)
    assert s.power(b)[0] == TIMEOUT and s.energy(b)[0] == SUCCESS
    s.at(0.4)
    assert s.power(b)[0] == SUCCESS


def test_a_bad_handle_is_refused(session):
    s = session({"devices": [{}]})
    mj = ctypes.c_ulonglong(0)
    assert s.lib.hlml_device_get_total_energy_consumption(ctypes.c_void_p(8), byref(mj)) == \
        INVALID_ARGUMENT


def test_a_bad_scenario_fails_init_with_driver_not_loaded(session):
    s = session({"devices": [{"nmae": "typo"}]})
    assert s.rc == DRIVER_NOT_LOADED
