"""Tests of the fake libamd_smi.so and librocm_smi64.so against their README and
tests/fake_common/power.py, at exact scenario instants (FAKE_AMDSMI_CLOCK_FILE)."""

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
LIBS = {"amdsmi": BUILD / "tests" / "fake_amdsmi" / "amdsmi" / "libamd_smi.so",
        "rocm_smi": BUILD / "tests" / "fake_amdsmi" / "rocm_smi" / "librocm_smi64.so"}
DEFS = {"amdsmi": ("JOULES_AMDSMI_FN", ROOT / "src" / "backends" / "amdsmi" / "amdsmi_symbols.def"),
        "rocm_smi": ("JOULES_RSMI_FN", ROOT / "src" / "backends" / "amdsmi" / "rocm_smi_symbols.def")}
UNIT_J = 2.0 ** -16
NOT_SUPPORTED, NOT_FOUND = 2, 31
u64, c_float, byref = ctypes.c_uint64, ctypes.c_float, ctypes.byref


class Session:
    """One process-wide session of the fake: a scenario, a clock file, the library."""

    def __init__(self, tmp: pathlib.Path, scenario: dict, lib: str = "amdsmi"):
        self.clock = tmp / "clock"
        self.clock.write_bytes(struct.pack("=q", 0))
        os.environ["FAKE_AMDSMI_SCENARIO"] = json.dumps(scenario)
        os.environ["FAKE_AMDSMI_CLOCK_FILE"] = str(self.clock)
        self.lib = ctypes.CDLL(str(LIBS[lib]))
        init = self.lib.amdsmi_init if lib == "amdsmi" else self.lib.rsmi_init
        init.argtypes = [ctypes.c_uint64]
        assert init(2) == 0
        self.shutdown = self.lib.amdsmi_shut_down if lib == "amdsmi" else self.lib.rsmi_shut_down

    def at(self, t: float) -> float:
        ns = int(round(t * 1e9))
        self.clock.write_bytes(struct.pack("=q", ns))
        return ns / 1e9

    def processors(self) -> list[int]:
        n = ctypes.c_uint32(0)
        assert self.lib.amdsmi_get_socket_handles(byref(n), None) == 0
        sockets = (ctypes.c_void_p * n.value)()
        assert self.lib.amdsmi_get_socket_handles(byref(n), sockets) == 0
        out = []
        for s in sockets:
            k = ctypes.c_uint32(0)
            assert self.lib.amdsmi_get_processor_handles(ctypes.c_void_p(s), byref(k), None) == 0
            hs = (ctypes.c_void_p * k.value)()
            assert self.lib.amdsmi_get_processor_handles(ctypes.c_void_p(s), byref(k), hs) == 0
            out += list(hs)
        return out

    def energy(self, h) -> tuple[int, int, float]:
        counts, ts, res = u64(), u64(), c_float()
        rc = self.lib.amdsmi_get_energy_count(ctypes.c_void_p(h), byref(counts), byref(res),
                                              byref(ts))
        return rc, counts.value, res.value

    def close(self):
        self.shutdown()


@pytest.fixture
def session(tmp_path):
    opened = []

    def make(scenario, lib="amdsmi"):
        s = Session(tmp_path, scenario, lib)
        opened.append(s)
        return s

    yield make
    for s in opened:
        s.close()


@pytest.mark.parametrize("lib", ["amdsmi", "rocm_smi"])
def test_each_library_exports_exactly_its_list(lib):
    macro, path = DEFS[lib]
    expected = {m.group(1) for m in re.finditer(rf"^{macro}\([0-9]+, *[^,]+, *(\w+),",
                                                path.read_text(), re.M)}
    if shutil.which("nm") is None:
        pytest.skip("nm not installed")
    out = subprocess.run(["nm", "-D", "--defined-only", str(LIBS[lib])], capture_output=True,
                         text=True, check=True).stdout
    assert {line.split()[-1] for line in out.splitlines() if line.strip()} == expected


def expected_counts(spec: dict, t: float) -> int:
    d = power.PowerDevice(spec, 10**9)
    c = spec.get("energy_counter", {})
    q = power.counter_instant(t, c.get("update_ms", 1.0) / 1000.0, c.get("phase_ms", 0.0) / 1000.0)
    unit = c.get("unit_uj", 1e6 / 65536.0)
    return (c.get("initial_counts", 0) + max(math.floor(d.energy_j(q) * 1e6 / unit), 0)) % 2**64


@pytest.mark.parametrize("spec", [
    {"power": {"type": "square", "low_w": 90, "high_w": 680, "period_s": 0.37, "duty": 0.3}},
    {"power": {"type": "linear", "points": [[0.1, 80], [0.9, 700], [2.5, 610]]},
     "energy_counter": {"update_ms": 100, "phase_ms": 35, "initial_counts": 2**64 - 5000}},
])
def test_the_accumulator_counts_2_to_the_minus_16_joules_and_reports_15_3(session, spec):
    s = session({"devices": [spec]})
    (h,) = s.processors()
    for when in [0.0, 0.05, 0.3711, 1.0, 1.2345, 2.0, 3.5]:
        t = s.at(when)
        rc, counts, res = s.energy(h)
        assert rc == 0 and res == pytest.approx(15.3)
        assert counts == expected_counts(spec, t), t


def test_partitions_share_the_gpu_and_only_the_primary_reports_energy(session):
    s = session({"devices": [{"partitions": 4}]})
    hs = s.processors()
    assert len(hs) == 4
    bdfs = []
    for h in hs:
        b = u64()
        assert s.lib.amdsmi_get_gpu_device_bdf(ctypes.c_void_p(h), byref(b)) == 0
        bdfs.append(b.value)
    assert [b & 7 for b in bdfs] == [0, 1, 2, 3] and len({b >> 3 for b in bdfs}) == 1
    assert [s.energy(h)[0] for h in hs] == [0, NOT_SUPPORTED, NOT_SUPPORTED, NOT_SUPPORTED]


@pytest.mark.parametrize("version,current,average", [("23.2.0", None, 0), ("24.7.0", 0, 4),
                                                     ("26.1.0", 8, 12)])
def test_power_info_is_written_in_the_layout_of_the_library_version(session, version, current,
                                                                     average):
    s = session({"library_version": version,
                 "devices": [{"power": {"type": "constant", "watts": 432},
                              "socket_power": {"current": current is not None,
                                               "average": current is None}}]})
    (h,) = s.processors()
    buf = ctypes.create_string_buffer(512)
    assert s.lib.amdsmi_get_power_info(ctypes.c_void_p(h), buf) == 0
    words = struct.unpack_from("=8I", buf.raw)
    if current is None:
        assert words[average // 4] == 432
    else:
        assert words[current // 4] == 432
    version_buf = ctypes.create_string_buffer(64)
    assert s.lib.amdsmi_get_lib_version(version_buf) == 0
    assert ".".join(map(str, struct.unpack_from("=3I", version_buf.raw))) == version


def test_a_lost_gpu_answers_not_found_from_then_on(session):
    s = session({"devices": [{"faults": [{"at_s": 1.0, "kind": "lost"}]}]})
    (h,) = s.processors()
    s.at(0.5)
    assert s.energy(h)[0] == 0
    s.at(1.0)
    assert s.energy(h)[0] == NOT_FOUND


def test_rocm_smi_numbers_the_same_processors_in_its_units(session):
    spec = {"partitions": 2, "power": {"type": "constant", "watts": 250.5}, "unique_id": 0xabc}
    s = session({"devices": [spec]}, lib="rocm_smi")
    n = ctypes.c_uint32()
    assert s.lib.rsmi_num_monitor_devices(byref(n)) == 0 and n.value == 2
    s.at(2.0)
    uw, kind = u64(), ctypes.c_uint32()
    assert s.lib.rsmi_dev_power_get(0, byref(uw), byref(kind)) == 0
    assert (uw.value, kind.value) == (250_500_000, 1)  # µW, current power
    bdfid, uid = u64(), u64()
    assert s.lib.rsmi_dev_pci_id_get(1, byref(bdfid)) == 0 and (bdfid.value >> 28) & 0xF == 1
    assert s.lib.rsmi_dev_unique_id_get(1, byref(uid)) == 0 and uid.value == 0xabc
    counts, ts, res = u64(), u64(), c_float()
    assert s.lib.rsmi_dev_energy_count_get(0, byref(counts), byref(res), byref(ts)) == 0
    assert counts.value == expected_counts(spec, 2.0)
