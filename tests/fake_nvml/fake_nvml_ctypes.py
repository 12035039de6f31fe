"""ctypes access to the fake libnvidia-ml.so.1 for the tests (test_fake_nvml.py).

FAKE_NVML_DIR (set by CTest) is the build folder that holds full/, r470/ and r390/.  A session
points FAKE_NVML_SCENARIO at a scenario and, for exact checks, FAKE_NVML_CLOCK_FILE at a file
whose 8 bytes are the scenario time in ns, so that each call happens at a known instant.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import struct
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
DEF_FILE = ROOT / "src" / "backends" / "nvml" / "nvml_symbols.def"
VARIANT_CUTOFF = {"full": 1_000_000, "r470": 1104, "r390": 899}

SUCCESS, UNINITIALIZED, INVALID_ARGUMENT, NOT_SUPPORTED, NO_PERMISSION = 0, 1, 2, 3, 4
NOT_FOUND, INSUFFICIENT_SIZE, DRIVER_NOT_LOADED, TIMEOUT = 6, 7, 9, 10
FUNCTION_NOT_FOUND, GPU_IS_LOST, ARGUMENT_VERSION_MISMATCH, UNKNOWN = 13, 15, 25, 999


def fake_dir() -> Path:
    env = os.environ.get("FAKE_NVML_DIR")
    return Path(env) if env else ROOT / "build" / "dev" / "tests" / "fake_nvml"


def library_path(variant: str = "full") -> Path:
    return fake_dir() / variant / "libnvidia-ml.so.1"


def def_symbols() -> list[tuple[int, str]]:
    """(level, name) of every entry of nvml_symbols.def, parsed as CMake does."""
    out = []
    for line in DEF_FILE.read_text().splitlines():
        m = re.match(r"^JOULES_NVML_FN\(([0-9]+), *[^,]+, *([A-Za-z_][A-Za-z0-9_]*),", line)
        if m:
            out.append((int(m.group(1)), m.group(2)))
    return out


class FieldValue(ctypes.Structure):
    class Value(ctypes.Union):
        _fields_ = [("dVal", ctypes.c_double), ("uiVal", ctypes.c_uint),
                    ("ullVal", ctypes.c_ulonglong)]

    _fields_ = [("fieldId", ctypes.c_uint), ("scopeId", ctypes.c_uint),
                ("timestamp", ctypes.c_longlong), ("latencyUsec", ctypes.c_longlong),
                ("valueType", ctypes.c_uint), ("nvmlReturn", ctypes.c_int), ("value", Value)]


class MemoryV2(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("total", ctypes.c_ulonglong),
                ("reserved", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                ("used", ctypes.c_ulonglong)]


class Memory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                ("used", ctypes.c_ulonglong)]


class ProcessV1(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong)]


class ProcessV2(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong),
                ("gpuInstanceId", ctypes.c_uint), ("computeInstanceId", ctypes.c_uint)]


class ProcessDetail(ctypes.Structure):
    _fields_ = ProcessV2._fields_ + [("usedGpuCcProtectedMemory", ctypes.c_ulonglong)]


class ProcessUtilization(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_uint), ("timeStamp", ctypes.c_ulonglong),
                ("smUtil", ctypes.c_uint), ("memUtil", ctypes.c_uint), ("encUtil", ctypes.c_uint),
                ("decUtil", ctypes.c_uint)]


class PciInfo(ctypes.Structure):
    _fields_ = [("busIdLegacy", ctypes.c_char * 16), ("domain", ctypes.c_uint),
                ("bus", ctypes.c_uint), ("device", ctypes.c_uint), ("pciDeviceId", ctypes.c_uint),
                ("pciSubSystemId", ctypes.c_uint), ("busId", ctypes.c_char * 32)]


class PowerValueV2(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("powerScope", ctypes.c_ubyte),
                ("powerValueMw", ctypes.c_uint)]


class EventData(ctypes.Structure):
    _fields_ = [("device", ctypes.c_void_p), ("eventType", ctypes.c_ulonglong),
                ("eventData", ctypes.c_ulonglong), ("gpuInstanceId", ctypes.c_uint),
                ("computeInstanceId", ctypes.c_uint)]


EVENT_TYPE_XID = 0x8
TIMEOUT = 10
MEMORY_V2_VERSION = ctypes.sizeof(MemoryV2) | (2 << 24)
POWER_VALUE_V2_VERSION = ctypes.sizeof(PowerValueV2) | (2 << 24)
assert ctypes.sizeof(FieldValue) == 40 and MEMORY_V2_VERSION == 0x02000028
assert ctypes.sizeof(ProcessUtilization) == 32
assert ctypes.sizeof(EventData) == 32

_LIBS: dict[str, ctypes.CDLL] = {}


def load(variant: str = "full") -> ctypes.CDLL:
    """The variant's library, loaded once per process (its state outlives a session)."""
    if variant not in _LIBS:
        lib = ctypes.CDLL(str(library_path(variant)))
        if hasattr(lib, "nvmlErrorString"):
            lib.nvmlErrorString.restype = ctypes.c_char_p
        _LIBS[variant] = lib
    return _LIBS[variant]


class Clock:
    """FAKE_NVML_CLOCK_FILE: writes scenario time (ns, int64) that the library reads per call."""

    def __init__(self, path: Path):
        self.path = path
        path.write_bytes(struct.pack("=q", 0))
        self.fd = os.open(path, os.O_RDWR)

    def set(self, t_s: float) -> int:
        ns = round(t_s * 1e9)
        os.pwrite(self.fd, struct.pack("=q", ns), 0)
        return ns

    def close(self) -> None:
        os.close(self.fd)


class Session:
    """One nvmlInit ... nvmlShutdown of a variant on a scenario; h(i) is device i's handle."""

    def __init__(self, lib: ctypes.CDLL):
        self.lib = lib

    def h(self, index: int = 0) -> ctypes.c_void_p:
        handle = ctypes.c_void_p()
        rc = self.lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle))
        assert rc == SUCCESS, rc
        return handle

    def call(self, name: str, *args) -> int:
        return getattr(self.lib, name)(*args)

    def uint(self, name: str, handle, *args) -> tuple[int, int]:
        out = ctypes.c_uint()
        rc = getattr(self.lib, name)(handle, *args, ctypes.byref(out))
        return rc, out.value

    def energy(self, handle) -> tuple[int, int]:
        out = ctypes.c_ulonglong()
        return self.lib.nvmlDeviceGetTotalEnergyConsumption(handle, ctypes.byref(out)), out.value

    def fields(self, handle, ids, scope: int = 0) -> list[FieldValue]:
        values = (FieldValue * len(ids))()
        for v, fid in zip(values, ids):
            v.fieldId, v.scopeId = fid, scope
        assert self.lib.nvmlDeviceGetFieldValues(handle, len(ids), values) == SUCCESS
        return list(values)

    def string(self, name: str, handle, length: int = 96) -> tuple[int, str]:
        """A device string getter; handle None calls a system one (no handle argument)."""
        buf = ctypes.create_string_buffer(length)
        args = (buf, length) if handle is None else (handle, buf, length)
        rc = getattr(self.lib, name)(*args)
        return rc, buf.value.decode()


@contextlib.contextmanager
def session(scenario: dict | str, variant: str = "full", clock: Clock | None = None,
            epoch_ns: int | None = None):
    """Initialises the variant on the scenario and shuts it down completely afterwards."""
    os.environ["FAKE_NVML_SCENARIO"] = scenario if isinstance(scenario, str) else json.dumps(
        scenario)
    if clock is not None:
        os.environ["FAKE_NVML_CLOCK_FILE"] = str(clock.path)
    else:
        os.environ.pop("FAKE_NVML_CLOCK_FILE", None)
    if epoch_ns is not None:
        os.environ["FAKE_NVML_EPOCH_NS"] = str(epoch_ns)
    else:
        os.environ.pop("FAKE_NVML_EPOCH_NS", None)
    lib = load(variant)
    rc = lib.nvmlInit_v2()
    assert rc == SUCCESS, f"nvmlInit_v2 returned {rc}"
    try:
        yield Session(lib)
    finally:
        count = ctypes.c_uint()
        while lib.nvmlDeviceGetCount_v2(ctypes.byref(count)) != UNINITIALIZED:
            lib.nvmlShutdown()
