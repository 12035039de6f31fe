"""What the fake vendor libraries share, in Python: power functions P(t) and their exact
integrals, the power model of a device (with `clamp_to_limit` and limits set mid-run) and the
instant a stepped energy counter shows.  Computed operation for operation as the C++ does
(power_function.cpp, power_model.cpp, power_spec.cpp), so that the doubles are bit-identical.
The scenario modules of the fakes (tests/fake_nvml/scenario.py, tests/fake_amdsmi/amd_scenario.py,
tests/fake_level_zero/ze_scenario.py) build on it.  Standard library only."""

from __future__ import annotations

import bisect
import math

__all__ = ["PowerFunction", "PowerDevice", "power_function", "round_half_away", "counter_instant"]


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


def power_function(spec: dict) -> PowerFunction:
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



class PowerDevice:
    """P(t) and E(t) of one device's `power` object; mirrors power_model.cpp."""

    def __init__(self, spec: dict, limit_mw: int):
        power = spec.get("power", {"type": "constant", "watts": 100.0})
        self.base = power_function(power)
        self.clamp = bool(power.get("clamp_to_limit", False))
        self.limit_mw = limit_mw
        self.epochs: list[_Epoch] = []
        if self.clamp:
            limit_w = self.limit_mw / 1000.0
            self.epochs.append(_Epoch(0.0, 0.0, limit_w, self.base.clamped(limit_w)))

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
        """Mirror a limit set at scenario time t (nvmlDeviceSetPowerManagementLimit)."""
        if not self.clamp:
            self.limit_mw = limit_mw
            return
        if limit_mw == self.limit_mw:
            return
        start = max(t, self.epochs[-1].start_s)
        limit_w = limit_mw / 1000.0
        self.epochs.append(_Epoch(start, self.energy_j(start), limit_w, self.base.clamped(limit_w)))
        self.limit_mw = limit_mw


def counter_instant(t: float, update_s: float, phase_s: float) -> float:
    """The instant whose energy a counter updated every update_s from phase_s shows at t."""
    q = t
    if update_s > 0.0:
        q = phase_s + float(math.floor((t - phase_s) / update_s)) * update_s
    return max(q, 0.0)
