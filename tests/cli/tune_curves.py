"""Workload curves for `joules tune` and `joules sweep` on the fake NVML, and the true optimum of
each goal on them.  Shared by tests/cli/test_tune.py and bench/suite/fig_tune.py.

A curve is a fake GPU that draws `power_w` when nothing caps it and whose workload takes
`step_s * factor(L)` per step at power limit L (tests/fake_nvml/README.md, "The workload's
response to a limit"):

    factor(L) = 1 + a * max(0, (knee_w - L) / 100) ** p       (the tune curves)
    factor(L) = max(1, knee_w / L) ** p                       ("tradeoff", for sweep)

At limit L the GPU draws min(power_w, L) (the scenario's power is clamped to the limit), so a
step costs E(L) = min(power_w, L) * step_s * factor(L) joules and T(L) = step_s * factor(L)
seconds.  The curves below were chosen so that each goal's optimum stands clear of the limits
two grid steps away (at least 3 % worse): a choice within one step of it is then a measurement,
not luck.
"""
from __future__ import annotations

GRID_W = list(range(700, 199, -25))  # the fake's default range, 200-700 W, on tune's 25 W grid
MAX_W = 700.0

CURVES = {
    # name: (power_w, knee_w, a, p)
    "knee350": (550.0, 350.0, 0.4, 2.0),
    "knee500": (650.0, 500.0, 0.2, 3.0),
    "memory450": (450.0, 450.0, 0.1, 3.0),
}
# Every limit below 600 W trades time for energy (E falls as 1/T rises): a front with a knee.
TRADEOFF = {"tradeoff": (600.0, 600.0, None, 0.6)}


def factor(curve: str, limit_w: float) -> float:
    if curve in TRADEOFF:
        _, knee, _, p = TRADEOFF[curve]
        return max(1.0, knee / limit_w) ** p
    _, knee, a, p = CURVES[curve]
    return 1.0 + a * max(0.0, (knee - limit_w) / 100.0) ** p


def power_of(curve: str) -> float:
    return (TRADEOFF.get(curve) or CURVES[curve])[0]


def device(curve: str, **extra) -> dict:
    """A fake GPU of the scenario format with the curve's power and workload."""
    power = power_of(curve)
    spec = {
        "power": {"type": "constant", "watts": power, "clamp_to_limit": True},
        "step_time_factor": [[w, round(factor(curve, w), 6)] for w in sorted(GRID_W)],
    }
    spec.update(extra)
    return spec


def point(curve: str, limit_w: float, step_s: float) -> tuple[float, float]:
    """(J per step, s per step) of one GPU at limit_w."""
    power = power_of(curve)
    t = step_s * factor(curve, limit_w)
    return min(power, limit_w) * t, t


def score(goal: str, e: float, t: float, gpus: int = 1, eta: float = 0.5) -> float:
    if goal in ("energy", "time-within"):
        return e
    if goal == "edp":
        return e * t
    if goal == "cost":
        return eta * e + (1 - eta) * gpus * MAX_W * t
    raise ValueError(goal)


def optimum(curve: str, goal: str, step_s: float = 1.0, max_slowdown: float = 0.05,
            baseline_w: float = MAX_W) -> float:
    """The grid limit the goal picks when every point is known exactly."""
    _, t0 = point(curve, baseline_w, step_s)
    best = None
    for w in GRID_W:
        e, t = point(curve, w, step_s)
        if goal == "time-within" and t > (1 + max_slowdown) * t0:
            continue
        s = score(goal, e, t)
        if best is None or s < best[0]:
            best = (s, w)
    return best[1]


def gap(curve: str, goal: str, chosen_w: float, step_s: float = 1.0) -> float:
    """How much worse the chosen limit is than the optimum on the goal's own measure (0.02 =
    2 %), from the curve itself."""
    best = optimum(curve, goal, step_s)
    return (score(goal, *point(curve, chosen_w, step_s)) /
            score(goal, *point(curve, best, step_s)) - 1.0)
