"""Ground truth for the fake NVML: what libnvidia-ml.so.1 reports for a scenario, in Python.

Loads the same scenario JSON (README.md) with the same defaults and computes, operation for
operation as the C++ does (scenario.cpp, and tests/fake_common's power.py for what every fake
shares), so that the doubles are bit-identical:

    s = load(path_or_json_text_or_dict)
    d = s.devices[0]
    d.watts(t)               # P(t), W
    d.energy_j(t)            # E(t) = integral of P over [0, t], J
    d.counter_mj(t)          # nvmlDeviceGetTotalEnergyConsumption, fields 83/191
    d.power_usage_mw(t)      # nvmlDeviceGetPowerUsage
    d.power_instant_mw(t)    # field 186
    d.power_average_mw(t)    # field 185
    d.set_power_limit(t, mw) # mirror a nvmlDeviceSetPowerManagementLimit call made at t
    d.step_time_factor(w)    # the workload's time per step at limit w, relative (README)

t is scenario time in seconds: (CLOCK_MONOTONIC - FAKE_NVML_EPOCH_NS) / 1e9, see time_s().
Standard library only; unlike the library it does not reject unknown keys.
"""

from __future__ import annotations

import bisect
import json
import math
import os
import pathlib
import sys
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "fake_common"))
from power import (PowerDevice, PowerFunction, counter_instant,  # noqa: E402  (tests/fake_common)
                   round_half_away)

__all__ = ["load", "Scenario", "Device", "PowerFunction", "time_s", "round_half_away"]

_ARCHITECTURES = {
    # name: (nvmlDeviceArchitecture_t, rank, compute capability, MIG-capable)
    "kepler": (2, 0, (3, 5), False),
    "maxwell": (3, 1, (5, 2), False),
    "pascal": (4, 2, (6, 0), False),
    "volta": (5, 3, (7, 0), False),
    "turing": (6, 4, (7, 5), False),
    "ampere": (7, 5, (8, 0), True),
    "ada": (8, 6, (8, 9), False),
    "hopper": (9, 7, (9, 0), True),
    "blackwell": (10, 8, (10, 0), True),
    "rubin": (13, 9, (11, 0), True),
}
_RANK_VOLTA = 3
_RANK_AMPERE = 5


def time_s(ns: int) -> float:
    """Scenario seconds from nanoseconds since the epoch, as the library converts them."""
    return ns / 1e9


class _Reading:
    def __init__(self, supported: bool, window_s: float, update_s: float):
        self.supported, self.window_s, self.update_s = supported, window_s, update_s


def _reading(spec: dict | None, default: _Reading) -> _Reading:
    if spec is None:
        return default
    return _Reading(
        bool(spec.get("supported", default.supported)),
        float(spec.get("window_ms", default.window_s * 1000.0)) / 1000.0,
        float(spec.get("update_ms", default.update_s * 1000.0)) / 1000.0,
    )


def _mw(watts: float) -> int:
    return round_half_away(watts * 1000.0)


class Device(PowerDevice):
    """One device of a scenario; mirrors device (scenario.cpp) and power_model.cpp."""

    def __init__(self, spec: dict, index: int, top_latency_us: int):
        self.spec = spec
        self.index = index
        arch_name = spec.get("architecture", "hopper")
        self.nvml_arch, self.rank, cc, self.mig_capable = _ARCHITECTURES[arch_name]
        self.architecture = arch_name
        self.compute_capability = tuple(spec.get("compute_capability", cc))
        self.name = spec.get("name", "NVIDIA H100 80GB HBM3")
        self.uuid = spec.get("uuid", "GPU-00000000-0000-4000-8000-0000000000%02x" % index)
        self.pci_bus_id = spec.get("pci_bus_id", "00000000:%02X:00.0" % (0x18 + index))
        self.latency_us = int(spec.get("latency_us", top_latency_us))
        self.no_permission = spec.get("permission", "ok") == "no_permission"

        volta_plus = self.rank >= _RANK_VOLTA
        ampere_plus = self.rank >= _RANK_AMPERE
        c = spec.get("energy_counter", {})
        self.counter_supported = bool(c.get("supported", volta_plus))
        self.counter_update_s = float(c.get("update_ms", 0.0)) / 1000.0
        self.counter_phase_s = float(c.get("phase_ms", 0.0)) / 1000.0
        self.initial_mj = int(c.get("initial_mj", 0))
        averaged, instant = _Reading(True, 1.0, 0.1), _Reading(True, 0.0, 0.0)
        self.power_usage = _reading(spec.get("power_usage"), averaged if ampere_plus else instant)
        self.power_instant = _reading(spec.get("power_instant"), instant)
        self.power_average = _reading(spec.get("power_average"), _Reading(ampere_plus, 1.0, 0.1))

        lim = spec.get("limits", {})
        self.default_limit_mw = _mw(float(lim.get("default_w", 700.0)))
        self.min_limit_mw = _mw(float(lim.get("min_w", 200.0)))
        self.max_limit_mw = _mw(float(lim.get("max_w", 700.0)))
        self.limit_settable = bool(lim.get("settable", True))
        self.limits_supported = bool(lim.get("supported", True))
        self.step_time_points = [(float(w), float(f)) for w, f in spec.get("step_time_factor", [])]
        current = lim.get("current_w")
        self.limit_mw = _mw(float(current)) if current is not None else self.default_limit_mw

        PowerDevice.__init__(self, spec, self.limit_mw)

        faults = spec.get("faults", [])
        self.lost_at_s = min(
            [float(f["at_s"]) for f in faults if f["kind"] == "lost"], default=math.inf
        )
        self.counter_resets_s = sorted(
            float(f["at_s"]) for f in faults if f["kind"] == "counter_reset"
        )
        self.faults = faults
        self.processes = list(spec.get("processes", []))
        self.mig = spec.get("mig", {})

    def step_time_factor(self, limit_w: float) -> float:
        """step_time_factor at limit_w: linear between its points, constant outside them."""
        c = self.step_time_points
        if not c:
            return 1.0
        if limit_w <= c[0][0]:
            return c[0][1]
        if limit_w >= c[-1][0]:
            return c[-1][1]
        i = bisect.bisect_right([w for w, _ in c], limit_w)
        (w0, f0), (w1, f1) = c[i - 1], c[i]
        return f0 + (limit_w - w0) / (w1 - w0) * (f1 - f0)

    # -- what the library reports --------------------------------------------------------------

    def counter_mj(self, t: float) -> int:
        q = counter_instant(t, self.counter_update_s, self.counter_phase_s)
        i = bisect.bisect_right(self.counter_resets_s, q)
        if i == 0:
            return self.initial_mj + max(math.floor(1000.0 * self.energy_j(q)), 0)
        r = self.counter_resets_s[i - 1]
        return max(math.floor(1000.0 * (self.energy_j(q) - self.energy_j(r))), 0)

    def reading_mw(self, r: _Reading, t: float) -> int:
        tau = r.update_s * float(math.floor(t / r.update_s)) if r.update_s > 0.0 else t
        if r.window_s > 0.0:
            watts = (self.energy_j(tau) - self.energy_j(tau - r.window_s)) / r.window_s
        else:
            watts = self.watts(tau)
        return min(max(round_half_away(1000.0 * watts), 0), 0xFFFFFFFF)

    def power_usage_mw(self, t: float) -> int:
        return self.reading_mw(self.power_usage, t)

    def power_instant_mw(self, t: float) -> int:
        return self.reading_mw(self.power_instant, t)

    def power_average_mw(self, t: float) -> int:
        return self.reading_mw(self.power_average, t)

    def lost(self, t: float) -> bool:
        return t >= self.lost_at_s

    def reading_status(self, kind: str, t: float) -> int:
        """The NVML error a reading of kind 'energy' or 'power' returns at t (0: none)."""
        for f in self.faults:
            if f["kind"] not in ("not_supported", "error"):
                continue
            what = f.get("what", "all")
            if what not in (kind, "all"):
                continue
            if float(f["at_s"]) <= t < float(f.get("until_s", math.inf)):
                return 3 if f["kind"] == "not_supported" else _error_code(f["code"])
        return 0


_ERROR_CODES = {
    "UNINITIALIZED": 1, "INVALID_ARGUMENT": 2, "NOT_SUPPORTED": 3, "NO_PERMISSION": 4,
    "NOT_FOUND": 6, "INSUFFICIENT_SIZE": 7, "DRIVER_NOT_LOADED": 9, "TIMEOUT": 10,
    "FUNCTION_NOT_FOUND": 13, "GPU_IS_LOST": 15, "RESET_REQUIRED": 16, "OPERATING_SYSTEM": 17,
    "LIB_RM_VERSION_MISMATCH": 18, "MEMORY": 20, "NO_DATA": 21, "UNKNOWN": 999,
}


def _error_code(code: Any) -> int:
    if isinstance(code, int):
        return code
    return _ERROR_CODES[code.removeprefix("NVML_ERROR_")]


class Scenario:
    def __init__(self, spec: dict):
        self.spec = spec
        self.driver_version = spec.get("driver_version", "570.86.15")
        self.nvml_version = spec.get("nvml_version", "12.570.86.15")
        self.cuda_driver_version = int(spec.get("cuda_driver_version", 12080))
        self.process_struct_bytes = int(spec.get("process_struct_bytes", 24))
        top_latency = int(spec.get("latency_us", 0))
        self.devices = [Device(d, i, top_latency) for i, d in enumerate(spec["devices"])]


def load(source: str | os.PathLike | dict) -> Scenario:
    """A scenario from a dict, JSON text (starting with '{') or a file path."""
    if isinstance(source, dict):
        return Scenario(source)
    text = str(source)
    if not text.lstrip().startswith("{"):
        with open(text, encoding="utf-8") as f:
            text = f.read()
    return Scenario(json.loads(text))
