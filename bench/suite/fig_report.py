"""joules report and aggregate on big inputs: the report of a 24-hour, 8-GPU run sampled every
100 ms (synthetic records in the real schema, bench/report/make_records.py: a step a second,
about 90 000 records, 250 MB) and the aggregate of 1000 run files.  Wall time (median of 3),
peak RSS and the size of the HTML written.  Goals: report <= 5 s and HTML <= 5 MB, aggregate of
1000 files <= 2 s."""
from __future__ import annotations

import os
import subprocess
import sys
import time

from .common import BENCH, JOULES, rmtree, summary

NAME = "report"
USES_PEERS = False  # joules alone: bench/run needs no peer for this figure

MAKE = BENCH / "report" / "make_records.py"


def timed(argv) -> tuple[float, int, int]:
    """(wall seconds, peak RSS in kB, exit status) of one run of argv."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise RuntimeError(f"{argv[:2]} exited {p.returncode}: {p.stderr.read().decode()[-300:]}")
    return wall, usage.ru_maxrss, p.returncode


def run(ctx) -> dict:
    reps = 1 if ctx.quick else 3
    hours = 2.0 if ctx.quick else 24.0
    files = 100 if ctx.quick else 1000
    tmp = ctx.tmpdir("report")
    long = tmp / "24h.jsonl"
    ctx.log(f"report: writing a {hours:g}-hour 8-GPU run (make_records.py long)")
    subprocess.run([sys.executable, str(MAKE), "long", str(long), "--hours", str(hours)],
                   check=True)
    many = tmp / "runs"
    ctx.log(f"report: writing {files} run files (make_records.py many)")
    subprocess.run([sys.executable, str(MAKE), "many", str(many), "--runs", str(files)],
                   check=True)
    records = sum(1 for _ in open(long))
    html = tmp / "24h.html"
    report_wall, report_rss = [], []
    for r in range(reps):
        ctx.log(f"report: joules report, run {r + 1}/{reps}")
        w, rss, _ = timed([str(JOULES), "report", "-q", str(long), "-o", str(html)])
        report_wall.append(w)
        report_rss.append(rss)
    listing = sorted(str(p) for p in many.glob("*.jsonl"))
    agg_wall, agg_rss = [], []
    for r in range(reps):
        ctx.log(f"report: joules aggregate of {files} files, run {r + 1}/{reps}")
        w, rss, _ = timed([str(JOULES), "aggregate", "-q", "--by", "host,day", *listing])
        agg_wall.append(w)
        agg_rss.append(rss)
    out = {"report_s": summary(report_wall), "report_peak_rss_kb": summary(report_rss),
           "html_bytes": html.stat().st_size, "input_bytes": long.stat().st_size,
           "input_records": records, "aggregate_s": summary(agg_wall),
           "aggregate_peak_rss_kb": summary(agg_rss),
           "aggregate_input_bytes": sum(os.path.getsize(p) for p in listing),
           "conditions": {"hours": hours, "gpus": 8, "sample_ms": 100, "step_s": 1.0,
                          "files": files, "repetitions": reps}}
    rmtree(tmp)
    return out


def tables(res: dict) -> list[dict]:
    c = res["conditions"]
    rows = [
        [f"`joules report`, {c['hours']:g}-hour {c['gpus']}-GPU run "
         f"({res['input_records']} records, {res['input_bytes'] / 1e6:.0f} MB)",
         f"{res['report_s']['median']:.2f} s", "≤ 5 s",
         f"{res['report_peak_rss_kb']['median'] / 1024:.0f} MB",
         f"HTML {res['html_bytes'] / 1e6:.2f} MB (≤ 5 MB)"],
        [f"`joules aggregate --by host,day`, {c['files']} run files "
         f"({res['aggregate_input_bytes'] / 1e6:.0f} MB)",
         f"{res['aggregate_s']['median']:.2f} s", "≤ 2 s",
         f"{res['aggregate_peak_rss_kb']['median'] / 1024:.0f} MB", ""],
    ]
    return [{"title": "Reading records back (median wall time of "
                      f"{c['repetitions']} runs)",
             "columns": ["task", "wall time", "goal", "peak RSS", "output"],
             "rows": rows,
             "notes": ["Inputs written by bench/report/make_records.py (the real schema, a step "
                       "a second, sample buckets as joules makes them at 100 ms)."]}]
