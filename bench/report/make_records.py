#!/usr/bin/env python3
"""Synthetic joules records in the real schema (docs/jsonl-schema.md, docs/schema/), for the
figures of `joules report` and `joules aggregate` (bench/suite/fig_report.py): writing them takes
seconds, running 24 hours would take a day.

    make_records.py long OUT.jsonl [--hours 24] [--gpus 8] [--sample-ms 100] [--step-s 1]
        one wrap run: session_start, a step record per step (every GPU's energy), an eval phase
        every 1000 steps, predictions at 0/10/50/90 %, a straggler, `sample` records bucketed as
        joules buckets them (record/sample_records.hpp: 1000 buckets of --sample-ms, then 500 of
        each doubled width), and session_end with its wrap summary.
    make_records.py many DIR [--runs 1000] [--steps 200]
        DIR/run-NNNN.jsonl: that many short runs on 16 hosts over 30 days, each a whole file.

Power is a deterministic function of time (GPU k a little below GPU 0, the straggler 12 %
above), so the same arguments write the same bytes.  Standard library only.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import pathlib

BUCKETS_PER_WIDTH = 1000  # record/sample_records.hpp, kBucketsPerWidth
TDP_W = 700.0


def iso(t: datetime.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def header(kind, run_id, host, when, labels):
    return {"type": kind, "schema_version": 1, "time": iso(when), "run_id": run_id,
            "hostname": host, "labels": labels}


def power(gpu: int, t: float, straggler: int | None) -> float:
    """A training step's pattern: compute, then communication, GPU k slightly apart."""
    phase = (t % 0.6) / 0.6
    u = 0.97 if phase < 0.8 else 0.45
    p = TDP_W * (0.1 + 0.9 * u * (1 - 0.005 * (gpu % 3)))
    return p * (1.12 if gpu == straggler else 1.0)


def energy(gpu: int, t0: float, t1: float, straggler: int | None) -> float:
    """The integral of power() over [t0, t1] (midpoint rule on 20 ms: exact enough here)."""
    n = max(1, int((t1 - t0) / 0.02))
    dt = (t1 - t0) / n
    return sum(power(gpu, t0 + (i + 0.5) * dt, straggler) for i in range(n)) * dt


def mean_power(gpu: int, straggler: int | None) -> float:
    return (0.8 * TDP_W * (0.1 + 0.9 * 0.97 * (1 - 0.005 * (gpu % 3)))
            + 0.2 * TDP_W * (0.1 + 0.9 * 0.45 * (1 - 0.005 * (gpu % 3)))) * (
        1.12 if gpu == straggler else 1.0)


def carbon_fields(e_j: float) -> dict:
    kwh = e_j / 3.6e6
    return {"energy_kwh": kwh, "facility_energy_kwh": kwh, "co2e_g": kwh * 344.1, "cost": kwh * 0.25}


def assessment(e_j: float) -> dict:
    kwh = e_j / 3.6e6
    return {"energy_kwh": kwh, "pue": 1.0, "pue_source": "default", "facility_energy_kwh": kwh,
            "co2e_g": kwh * 344.1,
            "co2e": {"g": kwh * 344.1, "intensity_g_per_kwh": 344.1,
                     "source": "Ember and Energy Institute, via Our World in Data", "year": 2024,
                     "region": "DE", "method": "country_average", "name": "Germany",
                     "licence": "CC BY 4.0", "attribution": "Ember (2025)"},
            "cost": kwh * 0.25,
            "cost_basis": {"amount": kwh * 0.25, "currency": "EUR", "price_per_kwh": 0.25,
                           "source": "--price-per-kwh", "year": None, "region": "DE",
                           "method": "user_price"},
            "equivalent": None, "note": None}


def devices(gpus: int) -> list[dict]:
    return [{"kind": "gpu", "vendor": "nvidia", "index": k, "uuid": f"GPU-{k:08x}-0000-4000-8000-bench0000000",
             "pci_bus_id": f"00000000:{0x18 + k:02X}:00.0", "name": "NVIDIA H100 80GB HBM3",
             "architecture": "hopper", "method": "counter", "energy_counter": True,
             "power_source": "instant", "power_window_s": None, "power_limit_w": TDP_W,
             "default_power_limit_w": TDP_W} for k in range(gpus)]


class Run:
    """One node's records of one wrap run, written as they would be."""

    def __init__(self, out, run_id, host, start, gpus, labels, straggler=None, user="ada"):
        self.out, self.run_id, self.host, self.start = out, run_id, host, start
        self.gpus, self.labels, self.straggler, self.user = gpus, labels, straggler, user
        self.mono0 = 12345.0
        self.window = 0
        self.windows_j = {"setup": 0.0, "steps": 0.0, "phases": {}, "other": 0.0, "tail": 0.0}
        self.gpu_j = [0.0] * gpus
        self.steps = 0
        self.tokens = 0.0
        self.peak = 0.0

    def at(self, t):
        return self.start + datetime.timedelta(seconds=t)

    def write(self, rec):
        self.out.write(json.dumps(rec, separators=(",", ":")) + "\n")

    def session_start(self, sample_ms):
        r = header("session_start", self.run_id, self.host, self.at(0), self.labels)
        r.update({"joules_version": "0.1.0", "subcommand": "wrap",
                  "command": ["torchrun", "--nproc_per_node=8", "train.py"], "pid": 4242,
                  "user": self.user, "start_time": iso(self.start), "start_monotonic_s": self.mono0,
                  "interval_ms": 100, "samples_interval_ms": sample_ms, "backend": "nvml",
                  "driver_version": "550.54.15", "nvml_version": "12.550.54.15",
                  "nvml_library": "libnvidia-ml.so.1",
                  "gpu_libraries": [{"backend": "nvml", "library": "libnvidia-ml.so.1",
                                     "version": "12.550.54.15", "driver_version": "550.54.15"}],
                  "scope": {"source": "CUDA_VISIBLE_DEVICES", "value": "0,1,2,3,4,5,6,7"},
                  "devices": devices(self.gpus), "notices": [], "components": [],
                  "carbon": {"pue": 1.0, "pue_source": "default", "region": "DE",
                             "intensity": None, "price": None, "note": None}})
        self.write(r)

    def window_record(self, t0, t1, step=None, phase=None, fast=False):
        # fast: each GPU's mean power, varying a few percent from window to window.
        wobble = 1.0 + 0.03 * math.sin(t0 * 0.37) + 0.01 * math.sin(t0 * 5.1)
        per = ([mean_power(k, self.straggler) * (t1 - t0) * wobble for k in range(self.gpus)]
               if fast else [energy(k, t0, t1, self.straggler) for k in range(self.gpus)])
        e = sum(per)
        for k, x in enumerate(per):
            self.gpu_j[k] += x
        med = sorted(per)[len(per) // 2]
        is_step = step is not None
        r = header("step" if is_step else "phase", self.run_id, self.host, self.at(t1), self.labels)
        r["window"] = self.window
        self.window += 1
        if is_step:
            r.update({"step": step, "step_gap": 1, "total_steps": self.total_steps,
                      "counter_restarted": False})
        else:
            r["phase"] = phase
        tokens = 524288.0 if is_step else None
        peak = max(power(k, t0, self.straggler) for k in range(self.gpus)) * self.gpus
        self.peak = max(self.peak, peak)
        r.update({"line": self.window * 3 if phase != "tail" else None,
                  "stream": "stdout" if phase != "tail" else None,
                  "start_monotonic_s": self.mono0 + t0, "end_monotonic_s": self.mono0 + t1,
                  "duration_s": t1 - t0, "energy_j": e})
        if is_step:
            r["energy_per_step_j"] = e
        r.update({"avg_power_w": e / (t1 - t0), "peak_power_w": peak, "method": "counter",
                  "components": {"gpu": {"energy_j": e, "avg_power_w": e / (t1 - t0),
                                         "method": "counter", "devices": self.gpus}},
                  **carbon_fields(e),
                  "tokens": tokens, "joules_per_token": e / tokens if tokens else None,
                  "tokens_per_joule": tokens / e if tokens else None,
                  "samples": None, "joules_per_sample": None, "samples_per_joule": None,
                  "metrics": {"loss": 2.0 + 3.0 / (1 + (step or 0) / 500), "lr": 3e-4,
                              "tokens_per_s": 524288.0 / (t1 - t0)} if is_step else {}})
        gpus = []
        for k, x in enumerate(per):
            g = {"index": k, "uuid": f"GPU-{k:08x}-0000-4000-8000-bench0000000", "energy_j": x}
            if is_step:
                g["energy_per_step_j"] = x
            g.update({"avg_power_w": x / (t1 - t0), "peak_power_w": power(k, t0, self.straggler),
                      "deviation": x / med - 1.0})
            gpus.append(g)
        r["gpus"] = gpus
        self.write(r)
        if is_step:
            self.windows_j["steps"] += e
            self.steps += 1
            self.tokens += tokens
        elif phase in ("setup", "other", "tail"):
            self.windows_j[phase] += e
        else:
            self.windows_j["phases"][phase] = self.windows_j["phases"].get(phase, 0.0) + e
        return e

    def samples(self, t_end, sample_ms):
        """Buckets as record/sample_records.hpp makes them, each from readings every 100 ms."""
        base, t, bucket = sample_ms / 1000.0, 0.0, 0
        while t < t_end:
            w = base
            while t >= BUCKETS_PER_WIDTH * w:
                w *= 2
            t1 = min(t + w, t_end)
            n = max(1, int(round((t1 - t) / 0.1)))
            devs, total = [], 0.0
            for k in range(self.gpus):
                reads = [power(k, t + (i + 1) * (t1 - t) / n, self.straggler) for i in range(min(n, 8))]
                e = mean_power(k, self.straggler) * (t1 - t)
                total += e
                devs.append({"kind": "gpu", "index": k,
                             "uuid": f"GPU-{k:08x}-0000-4000-8000-bench0000000", "energy_j": e,
                             "power_w": {"min": min(reads), "mean": e / (t1 - t), "max": max(reads)},
                             "gpu_util_percent": {"min": 45, "mean": 87, "max": 97},
                             "memory_util_percent": {"min": 27, "mean": 52, "max": 58},
                             "temperature_c": {"min": 61, "mean": 66, "max": 71},
                             "sm_clock_hz": {"min": 1.83e9, "mean": 1.95e9, "max": 1.98e9},
                             "memory_clock_hz": {"min": 2.619e9, "mean": 2.619e9, "max": 2.619e9},
                             "clock_events": ["power_cap"], "lost": False})
            r = header("sample", self.run_id, self.host, self.at(t1), self.labels)
            r.update({"bucket": bucket, "start_monotonic_s": self.mono0 + t,
                      "end_monotonic_s": self.mono0 + t1, "duration_s": t1 - t, "offset_s": t,
                      "readings": n, "energy_j": total, "avg_power_w": total / (t1 - t),
                      "devices": devs})
            self.write(r)
            t, bucket = t1, bucket + 1

    def session_end(self, t_end):
        total = sum(self.gpu_j)
        r = header("session_end", self.run_id, self.host, self.at(t_end), self.labels)
        r.update({"status": "completed", "degraded": False, "degradations": [], "exit_status": 0,
                  "exit_code": 0, "exit_signal": None, "forwarded_signal": None,
                  "start_time": iso(self.start), "end_time": iso(self.at(t_end)),
                  "start_monotonic_s": self.mono0, "end_monotonic_s": self.mono0 + t_end,
                  "duration_s": t_end, "energy_j": total, "energy_wh": total / 3600,
                  "avg_power_w": total / t_end, "peak_power_w": self.peak,
                  "samples": int(t_end * 10), "method": "counter",
                  "devices": [{"kind": "gpu", "vendor": "nvidia", "index": k,
                               "uuid": f"GPU-{k:08x}-0000-4000-8000-bench0000000",
                               "name": "NVIDIA H100 80GB HBM3", "method": "counter",
                               "energy_j": e, "avg_power_w": e / t_end,
                               "peak_power_w": power(k, 0.1, self.straggler), "counter_resets": 0,
                               "counter_wraps": 0, "reset_estimated_j": 0, "read_errors": 0,
                               "lost_at_s": None, "counter_lost_at_s": None,
                               "readings_stopped_at_s": None} for k, e in enumerate(self.gpu_j)],
                  "components": {"gpu": {"energy_j": total, "avg_power_w": total / t_end,
                                         "method": "counter", "devices": self.gpus}},
                  "estimated_energy_j": 0, "carbon": assessment(total),
                  "wrap": {"step_windows": self.steps, "steps": self.steps,
                           "last_step": self.steps, "total_steps": self.total_steps,
                           "energy_per_step_j": self.windows_j["steps"] / max(1, self.steps),
                           "tokens": self.tokens,
                           "joules_per_token": self.windows_j["steps"] / self.tokens,
                           "tokens_per_joule": self.tokens / self.windows_j["steps"],
                           "samples": None, "joules_per_sample": None, "samples_per_joule": None,
                           "energy_by_window_j": self.windows_j, "windows": self.window,
                           "windows_sum_j": total, "conserved": True,
                           "stragglers": [] if self.straggler is None else
                           [{"gpu": self.straggler, "deviation": 0.12, "at_step": 30}]}})
        self.write(r)


def write_run(path, run_id, host, start, gpus, hours, sample_ms, step_s, straggler, labels,
              user="ada", fast=False):
    t_end = hours * 3600.0
    with open(path, "w") as out:
        run = Run(out, run_id, host, start, gpus, labels, straggler, user)
        run.total_steps = int((t_end - 60.0) / step_s)
        run.session_start(sample_ms)
        t = 0.0
        run.window_record(0.0, 60.0, phase="setup", fast=fast)
        t, step = 60.0, 0
        milestones = {int(run.total_steps * p / 100): p for p in (10, 50, 90)}
        while t + step_s <= t_end - 1.0:
            step += 1
            run.window_record(t, t + step_s, step=step, fast=fast)
            t += step_s
            if step == 20 or step in milestones:
                p = header("prediction", run_id, host, run.at(t), labels)
                e = sum(run.gpu_j) + (run.total_steps - step) * (sum(run.gpu_j) / (t / step_s))
                p.update({"at_step": step, "total_steps": run.total_steps, "scope": "run",
                          "epoch": None, "epochs": None, "steps_per_epoch": None,
                          "milestone_percent": milestones.get(step, 0), "energy_j": e,
                          "energy_wh": e / 3600, "duration_s": t_end, "remaining_s": t_end - t,
                          "finish_time": iso(run.at(t_end)), "energy_per_step_j": e / run.total_steps,
                          "duration_per_step_s": step_s, "basis_steps": step,
                          "carbon": assessment(e)})
                run.write(p)
            if straggler is not None and step == 30:
                s = header("straggler", run_id, host, run.at(t), labels)
                s.update({"gpu": straggler, "uuid": f"GPU-{straggler:08x}-0000-4000-8000-bench0000000",
                          "deviation": 0.12, "at_step": 30, "window_steps": 20})
                run.write(s)
            if step % 1000 == 0:
                run.window_record(t, t + 30.0, phase="eval", fast=fast)
                t += 30.0
        run.window_record(t, t_end, phase="tail", fast=fast)
        run.samples(t_end, sample_ms)
        run.session_end(t_end)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    long = sub.add_parser("long")
    long.add_argument("out")
    long.add_argument("--hours", type=float, default=24.0)
    long.add_argument("--gpus", type=int, default=8)
    long.add_argument("--sample-ms", type=int, default=100)
    long.add_argument("--step-s", type=float, default=1.0)
    many = sub.add_parser("many")
    many.add_argument("dir")
    many.add_argument("--runs", type=int, default=1000)
    many.add_argument("--steps", type=int, default=200)
    a = ap.parse_args()
    start = datetime.datetime(2026, 11, 1, 8, 0, 0, tzinfo=datetime.timezone.utc)
    if a.what == "long":
        write_run(a.out, "bench-24h", "gpu-node-01", start, a.gpus, a.hours, a.sample_ms,
                  a.step_s, straggler=5, labels={"model": "gpt-7b"}, fast=True)
        return 0
    d = pathlib.Path(a.dir)
    d.mkdir(parents=True, exist_ok=True)
    for i in range(a.runs):
        when = start + datetime.timedelta(hours=i * 30 * 24 / a.runs)
        hours = (60.0 + a.steps * 1.0 + 2.0) / 3600.0
        write_run(d / f"run-{i:04d}.jsonl", f"job-{i:04d}", f"gpu-node-{i % 16:02d}", when, 8,
                  hours, 1000, 1.0, None, {"team": f"t{i % 4}"}, user=f"user{i % 7}", fast=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
