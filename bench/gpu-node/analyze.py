"""What bench/gpu-node/run.sh wrote, against its reference reader: each joules run's total against
the energy counter as read every 5 ms by reference_reader.py (each update placed in the middle
of the two reads around it, linear between updates), and against the integral of instantaneous
power; the step windows of each `wrap` run; matcha's total over its own start and end.

    python3 bench/gpu-node/analyze.py OUT_DIR
"""
import bisect
import datetime
import json
import pathlib
import statistics
import sys


def main():
    d = pathlib.Path(sys.argv[1])
    rows = [tuple(map(float, line.split()))
            for line in (d / "reference.txt").read_text().splitlines() if line.strip()]
    updates = [((a[0] + b[0]) / 2, b[1] / 1000.0) for a, b in zip(rows, rows[1:]) if b[1] != a[1]]
    at = [u[0] for u in updates]

    def counter_j(t):
        i = bisect.bisect_left(at, t)
        if i == 0 or i == len(at):
            raise ValueError(f"{t:.3f} s is outside the reference's readings")
        (ta, ea), (tz, ez) = updates[i - 1], updates[i]
        return ea + (ez - ea) * (t - ta) / (tz - ta)

    def instant_j(t0, t1):
        e = 0.0
        for a, b in zip(rows, rows[1:]):
            lo, hi = max(a[0], t0), min(b[0], t1)
            if hi > lo and a[3] >= 0 and b[3] >= 0:
                e += (hi - lo) * (a[3] + b[3]) / 2000.0
        return e

    gaps = [b - a for a, b in zip(at, at[1:])]
    print(f"reference: {len(rows)} readings over {rows[-1][0] - rows[0][0]:.1f} s; the counter "
          f"changed {len(updates)} times, a median {statistics.median(gaps) * 1000:.2f} ms apart")
    offset = None
    for f in sorted(d.glob("*.jsonl")):
        records = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
        if f.name.startswith("matcha"):
            continue
        end = [r for r in records if r["type"] == "session_end"][-1]
        t0, t1 = end["start_monotonic_s"], end["end_monotonic_s"]
        offset = wall(end["start_time"]) - t0
        c, p = counter_j(t1) - counter_j(t0), instant_j(t0, t1)
        print(f"\n{f.name}: {end['duration_s']:.2f} s, joules {end['energy_j']:.1f} J "
              f"({end['method']}); reference counter {c:.1f} J ({pct(end['energy_j'], c)}); "
              f"instantaneous power integrated {p:.1f} J ({pct(end['energy_j'], p)})")
        steps = [r for r in records if r["type"] == "step"]
        phases = [r for r in records if r["type"] == "phase"]
        if steps:
            windows = sum(r["energy_j"] for r in steps + phases)
            print(f"  {len(steps)} step windows ({sum(r['step_gap'] for r in steps)} steps, last "
                  f"{steps[-1]['step']}), phases {[r['phase'] for r in phases]}; median "
                  f"{statistics.median(r['energy_per_step_j'] for r in steps):.2f} J/step; the "
                  f"windows add up to {windows:.3f} J of {end['energy_j']:.3f} J")
            # Each window against the reference counter over the same instants: what the
            # placement of its two edges is worth, window by window.
            off = sorted(abs(r["energy_j"] - (counter_j(r["end_monotonic_s"])
                                              - counter_j(r["start_monotonic_s"])))
                         for r in steps + phases)
            print(f"  windows against the reference: |difference| median {statistics.median(off):.2f} J, "
                  f"p95 {off[int(0.95 * (len(off) - 1))]:.2f} J, largest {off[-1]:.2f} J")
    for f in sorted(d.glob("matcha-*.jsonl")):
        records = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
        start = [r for r in records if r["type"] == "session_start"][-1]
        end = [r for r in records if r["type"] == "session_end"][-1]
        if offset is None:
            break
        t0, t1 = wall(start["ts"]) - offset, wall(end["ts"]) - offset
        try:
            c = counter_j(t1) - counter_j(t0)
        except ValueError as e:
            print(f"\n{f.name}: {e}")
            continue
        print(f"\n{f.name}: {end['duration_s']} s, matcha {end['total_energy_j']:.1f} J; reference "
              f"counter between its start and end records {c:.1f} J ({pct(end['total_energy_j'], c)})"
              f"; peak {end['peak_power_w']} W")


def wall(iso):
    return datetime.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def pct(x, ref):
    return f"{(x - ref) / ref * 100:+.3f} %"


if __name__ == "__main__":
    main()
