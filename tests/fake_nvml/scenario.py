"""Ground truth for the fake NVML: what libnvidia-ml.so.1 reports for a scenario, in Python.

Loads the same scenario JSON (README.md) with the same defaults and computes, operation for
operation as the C++ does (power_function.cpp, power_model.cpp, scenario.cpp), so that the
doubles are bit-identical:

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
from typing import Any

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


def round_half_away(x: float) -> int:
    """std::llround: to nearest, halves away from zero (Python's round() goes to even)."""
    f = math.floor(x)
    if x >= 0:
        return f + 1 if x - f >= 0.5 else f
    c = math.ceil(x)
    return c - 1 if c - x >= 0.5 else c


class PowerFunction:
    """P(t) and its exact integral; mirrors power_function.cpp."""

    def __init__(self) -> None:
        self.square = False
        self.x: list[float] = []
        self.a: list[float] = []
        self.b: list[float] = []
        self.prefix: list[float] = []
        self.before = 0.0
        self.after = 0.0
        self.uniform = False
        self.start = 0.0
        self.dt = 1.0
        self.low = self.high = 0.0
        self.period, self.duty, self.phase = 1.0, 0.5, 0.0
        self.primitive_at_zero = 0.0

    @staticmethod
    def constant(watts: float) -> "PowerFunction":
        return PowerFunction.piecewise([0.0], [], [], watts, watts)

    @staticmethod
    def piecewise(x, a, b, before, after) -> "PowerFunction":
        f = PowerFunction()
        f.x, f.a, f.b = list(x), list(a), list(b)
        f.before, f.after = before, after
        f._finish()
        return f

    @staticmethod
    def make_uniform(start: float, dt: float, watts) -> "PowerFunction":
        x = [start + float(i) * dt for i in range(len(watts) + 1)]
        f = PowerFunction.piecewise(x, watts, watts, watts[0], watts[-1])
        f.uniform, f.start, f.dt = True, start, dt
        return f

    @staticmethod
    def make_square(low, high, period, duty, phase) -> "PowerFunction":
        f = PowerFunction()
        f.square = True
        f.low, f.high, f.period, f.duty, f.phase = low, high, period, duty, phase
        f._finish()
        return f

    def _finish(self) -> None:
        if not self.square:
            self.prefix = [0.0] * len(self.x)
            for i in range(len(self.x) - 1):
                self.prefix[i + 1] = (
                    self.prefix[i] + (self.x[i + 1] - self.x[i]) * (self.a[i] + self.b[i]) / 2.0
                )
        self.primitive_at_zero = self._primitive(0.0)

    def _interval(self, t: float) -> int:
        intervals = len(self.x) - 1
        if self.uniform:
            i = math.floor((t - self.start) / self.dt)
            if i < 0:
                return -1
            return intervals if i >= intervals else i
        return min(bisect.bisect_right(self.x, t) - 1, intervals)

    def watts(self, t: float) -> float:
        if self.square:
            u = (t - self.phase) / self.period
            f = u - math.floor(u)
            return self.high if f < self.duty else self.low
        i = self._interval(t)
        if i < 0:
            return self.before
        if i + 1 >= len(self.x):
            return self.after
        x, a, b = self.x, self.a, self.b
        return a[i] + (b[i] - a[i]) * (t - x[i]) / (x[i + 1] - x[i])

    def _primitive(self, t: float) -> float:
        if self.square:
            u = (t - self.phase) / self.period
            k = float(math.floor(u))
            f = u - k
            per_period = self.duty * self.high + (1.0 - self.duty) * self.low
            if f < self.duty:
                part = f * self.high
            else:
                part = self.duty * self.high + (f - self.duty) * self.low
            return self.period * (k * per_period + part)
        i = self._interval(t)
        x, a, b = self.x, self.a, self.b
        if i < 0:
            return (t - x[0]) * self.before
        if i + 1 >= len(x):
            return self.prefix[i] + (t - x[i]) * self.after
        p = a[i] + (b[i] - a[i]) * (t - x[i]) / (x[i + 1] - x[i])
        return self.prefix[i] + (t - x[i]) * (a[i] + p) / 2.0

    def energy_j(self, t: float) -> float:
        return self._primitive(t) - self.primitive_at_zero

    def clamped(self, limit_w: float) -> "PowerFunction":
        lim = limit_w
        if self.square:
            return PowerFunction.make_square(
                min(self.low, lim), min(self.high, lim), self.period, self.duty, self.phase
            )
        if self.uniform:
            return PowerFunction.make_uniform(self.start, self.dt, [min(w, lim) for w in self.a])
        x, a, b = [self.x[0]], [], []

        def push(left, right, end):
            a.append(left)
            b.append(right)
            x.append(end)

        for i in range(len(self.x) - 1):
            ai, bi, x0, x1 = self.a[i], self.b[i], self.x[i], self.x[i + 1]
            if ai <= lim and bi <= lim:
                push(ai, bi, x1)
            elif ai >= lim and bi >= lim:
                push(lim, lim, x1)
            else:
                xc = min(max(x0 + (lim - ai) * (x1 - x0) / (bi - ai), x0), x1)
                if ai < lim:
                    push(ai, lim, xc)
                    push(lim, lim, x1)
                else:
                    push(lim, lim, xc)
                    push(lim, bi, x1)
        return PowerFunction.piecewise(x, a, b, min(self.before, lim), min(self.after, lim))


def _power_function(spec: dict) -> PowerFunction:
    kind = spec.get("type", "constant")
    if kind == "constant":
        return PowerFunction.constant(float(spec.get("watts", 100.0)))
    if kind in ("steps", "linear"):
        ts = [float(p[0]) for p in spec["points"]]
        ws = [float(p[1]) for p in spec["points"]]
        a = ws[:-1]
        b = ws[:-1] if kind == "steps" else ws[1:]
        return PowerFunction.piecewise(ts, a, b, ws[0], ws[-1])
    if kind == "segments":
        return PowerFunction.make_uniform(
            float(spec.get("start_s", 0.0)), float(spec["dt_s"]), [float(w) for w in spec["watts"]]
        )
    if kind == "square":
        return PowerFunction.make_square(
            float(spec.get("low_w", 0.0)),
            float(spec.get("high_w", 0.0)),
            float(spec.get("period_s", 1.0)),
            float(spec.get("duty", 0.5)),
            float(spec.get("phase_s", 0.0)),
        )
    raise ValueError(f"unknown power type {kind!r}")


class _Epoch:
    def __init__(self, start_s: float, base_j: float, limit_w: float, fn: PowerFunction):
        self.start_s, self.base_j, self.limit_w, self.fn = start_s, base_j, limit_w, fn


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


class Device:
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

        power = spec.get("power", {"type": "constant", "watts": 100.0})
        self.base = _power_function(power)
        self.clamp = bool(power.get("clamp_to_limit", False))
        self.epochs: list[_Epoch] = []
        if self.clamp:
            limit_w = self.limit_mw / 1000.0
            self.epochs.append(_Epoch(0.0, 0.0, limit_w, self.base.clamped(limit_w)))

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

    # -- P and E -------------------------------------------------------------------------------

    def _epoch(self, t: float) -> _Epoch:
        starts = [e.start_s for e in self.epochs[1:]]
        return self.epochs[bisect.bisect_right(starts, t)]

    def watts(self, t: float) -> float:
        if not self.clamp:
            return self.base.watts(t)
        return self._epoch(t).fn.watts(t)

    def energy_j(self, t: float) -> float:
        if not self.clamp:
            return self.base.energy_j(t)
        e = self._epoch(t)
        return e.base_j + (e.fn.energy_j(t) - e.fn.energy_j(e.start_s))

    def set_power_limit(self, t: float, limit_mw: int) -> None:
        """Mirror a successful nvmlDeviceSetPowerManagementLimit made at scenario time t."""
        if not self.clamp:
            self.limit_mw = limit_mw
            return
        if limit_mw == self.limit_mw:
            return
        start = max(t, self.epochs[-1].start_s)
        limit_w = limit_mw / 1000.0
        self.epochs.append(_Epoch(start, self.energy_j(start), limit_w, self.base.clamped(limit_w)))
        self.limit_mw = limit_mw

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
        q = t
        if self.counter_update_s > 0.0:
            u, ph = self.counter_update_s, self.counter_phase_s
            q = ph + float(math.floor((t - ph) / u)) * u
        q = max(q, 0.0)
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
