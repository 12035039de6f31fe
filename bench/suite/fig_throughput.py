"""Step lines per second through `wrap`, bytes per second of plain output, and memory for a line
of 1 GB without a newline and for 10 million steps; 8 fake GPUs, 20 µs per NVML call.

The child (bench/children/emit.py) writes ~1 MiB blocks as fast as it can; the tool's stdout goes
to /dev/null.  Rates are end to end: lines (or bytes) divided by the tool's wall time, start-up
included.  joules: `joules wrap -q --no-inline` (the child on a pseudo-terminal; also with
`-o /dev/null`, step records written, and with --no-pty for plain output); matcha: `matcha wrap`
in its default mode (each line echoed, an energy suffix on step lines: with --output it would
drop the child's output).  A run whose memory passes 4 GB is stopped (the machine is shared).  Memory: the peak resident set of the tool's own process (VmHWM; the child excluded).

The ceiling: bench/passthrough/passthrough_ceiling starts the same child on a pseudo-terminal or a
pipe and does nothing but read 64 KiB and write it to /dev/null: what this kernel lets any
pass-through reach.  The child never blocked: bench/passthrough/write_latency prints 10,000 step
lines a second for 5 s and times each of its own write() calls, straight to /dev/null, through
the minimal reader, and through `joules wrap` (8 fake GPUs, 20 µs per NVML call)."""
from __future__ import annotations

import subprocess

import json
import os

from .common import (CHILDREN, JOULES, PASSTHROUGH_CEILING, SYS_PY, VENV, WRITE_LATENCY, Watched,
                     constant_scenario, fake_env, ratio, run_timed)
from .render import fmt_mb, fmt_ratio, fmt_rate, fmt_s

NAME = "throughput"


RSS_LIMIT_KB = 4 * 1048576


def _tool_argv(tool, kind, count, pty=True, records=False):
    child = [SYS_PY, str(CHILDREN / "emit.py"), kind, str(int(count))]
    if tool == "joules":
        return [str(JOULES), "wrap", "-q", "--no-inline", *(["-o", "/dev/null"] if records else []),
                *([] if pty else ["--no-pty"]), "--", *child]
    return [str(VENV / "bin" / "matcha"), "wrap", "--", *child]


def _measure(ctx, tool, kind, count, env, pty=True, records=False, timeout=300):
    w = Watched(f"{tool}-{kind}", _tool_argv(tool, kind, count, pty, records), env,
                workload="emit.py", stdout=subprocess.DEVNULL, period=0.05,
                rss_limit_kb=RSS_LIMIT_KB)
    status = w.wait(timeout=timeout)
    wall = w.t_end - w.t_launch
    rec = {"count": int(count), "wall_s": wall, "peak_rss_kb": w.peak_hwm_kb(),
           "exit_status": status,
           "cpu_s": (w.rusage.ru_utime + w.rusage.ru_stime) if w.rusage else None}
    if w.killed_reason:
        rec["error"] = w.killed_reason
    elif status != 0:
        rec["error"] = f"exit status {status}: {w.stderr_text.strip()[-300:]}"
    if records:
        rec["records"] = True
    ctx.log(f"throughput: {tool} {kind} {int(count):,} {'' if pty else '(no pty) '}"
            f"{'(-o) ' if records else ''}"
            f"in {wall:.2f} s, peak RSS {rec['peak_rss_kb'] / 1024:.1f} MB")
    return rec


def _ceiling(ctx, mode, size, env):
    """The minimal reader's rate through a pty or a pipe (bytes/s, from the child's start to its
    end of output)."""
    p = subprocess.run([str(PASSTHROUGH_CEILING), mode, SYS_PY, str(CHILDREN / "emit.py"), "plain",
                        str(int(size))], env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, timeout=300)
    total, seconds = p.stderr.split()[:2]
    rate = int(total) / float(seconds)
    ctx.log(f"throughput: minimal reader, {mode}: {rate / 1e6:.1f} MB/s")
    return {"count": int(total), "wall_s": float(seconds), "bytes_per_s": rate}


LATENCY_RATE = 10000
LATENCY_S = 5


def _write_latency(ctx, label, prefix, env):
    """The child's own write() latency at LATENCY_RATE lines/s, run under `prefix`."""
    report = ctx.tmpdir("latency") / "report.json"
    cmd = [*prefix, str(WRITE_LATENCY), str(LATENCY_RATE), str(LATENCY_S), str(report)]
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=120, check=True)
    rec = json.loads(report.read_text())
    ctx.log(f"throughput: write latency, {label}: p99 {rec['p99_us']:.1f} us, "
            f"max {rec['max_us']:.0f} us")
    return rec


def run(ctx) -> dict:
    q = ctx.quick
    env = fake_env(constant_scenario(8))
    out = {"steps": {"joules": [], "matcha": []}, "plain": {}, "longline": {"joules": [], "matcha": []}}

    # The child alone: how fast it can write, so a reader can tell what limits a rate.
    n_alone = 10**5 if q else 10**6
    wall, _, _ = run_timed([SYS_PY, str(CHILDREN / "emit.py"), "steps", str(n_alone)], env)
    out["child_alone"] = {"steps_per_s": n_alone / wall, "count": n_alone}
    b_alone = (32 if q else 256) * 2**20
    wall, _, _ = run_timed([SYS_PY, str(CHILDREN / "emit.py"), "plain", str(b_alone)], env)
    out["child_alone"]["plain_bytes_per_s"] = b_alone / wall

    for n in ([10**3, 10**4, 10**5] if q else [10**3, 10**4, 10**5, 10**6, 10**7]):
        out["steps"]["joules"].append(_measure(ctx, "joules", "steps", n, env, timeout=240))
    out["steps"]["joules -o"] = [_measure(ctx, "joules", "steps", 10**4 if q else 10**5, env,
                                          records=True)]
    for n in ([300] if q else [10**3, 3000]):
        out["steps"]["matcha"].append(_measure(ctx, "matcha", "steps", n, env))

    plain_j = (32 if q else 256) * 2**20
    plain_m = (8 if q else 16) * 2**20
    out["plain"]["joules"] = _measure(ctx, "joules", "plain", plain_j, env)
    out["plain"]["joules --no-pty"] = _measure(ctx, "joules", "plain", plain_j, env, pty=False)
    out["plain"]["matcha"] = _measure(ctx, "matcha", "plain", plain_m, env)

    for size in ([16 * 2**20, 64 * 2**20] if q else [64 * 2**20, 256 * 2**20, 2**30]):
        out["longline"]["joules"].append(_measure(ctx, "joules", "longline", size, env))
    for size in ([16 * 2**20] if q else [16 * 2**20, 64 * 2**20]):
        out["longline"]["matcha"].append(_measure(ctx, "matcha", "longline", size, env))

    # What any pass-through reaches on this kernel, and the child's own writes.
    out["ceiling"] = {m: _ceiling(ctx, m, plain_j, env) for m in ("pty", "pipe")}
    joules = [str(JOULES), "wrap", "-q", "--no-inline"]
    out["write_latency"] = {
        "rate_lines_per_s": LATENCY_RATE, "seconds": LATENCY_S,
        "/dev/null": _write_latency(ctx, "/dev/null", [], env),
        "minimal reader, pty": _write_latency(ctx, "reader pty", [str(PASSTHROUGH_CEILING), "pty"],
                                              env),
        "joules wrap": _write_latency(ctx, "joules", [*joules, "--"], env),
        "joules wrap -o": _write_latency(ctx, "joules -o", [*joules, "-o", os.devnull, "--"],
                                         env),
        "joules wrap --no-pty": _write_latency(ctx, "joules --no-pty",
                                               [*joules, "--no-pty", "--"], env),
    }
    out["conditions"] = {"gpus": 8, "latency_us": 20, "rss_limit_kb": RSS_LIMIT_KB}
    return out


def _rate(rec):
    if rec is None or rec.get("error") or not rec.get("wall_s"):
        return None
    return rec["count"] / rec["wall_s"]


def _best(recs):
    ok = [r for r in recs if not r.get("error")]
    return max(ok, key=lambda r: r["count"]) if ok else None


def _lines(rec):
    return "–" if rec is None else f"{fmt_rate(_rate(rec), 'lines/s')} ({rec['count']:,} lines)"


def _mbps(rec):
    r = _rate(rec)
    return fmt_rate(r / 1e6 if r else None, "MB/s")


def tables(res: dict) -> list[dict]:
    st = res["steps"]
    jbest, obest, mbest = _best(st["joules"]), _best(st.get("joules -o", [])), _best(st["matcha"])
    pj, pn, pm = (res["plain"].get(k) for k in ("joules", "joules --no-pty", "matcha"))
    alone = res["child_alone"]
    rows = [
        ["step lines per second", _lines(jbest), _lines(mbest),
         fmt_ratio(ratio(_rate(jbest), _rate(mbest))), fmt_rate(alone["steps_per_s"], "lines/s")],
        ["step lines per second, step records written (-o)", _lines(obest), "",
         fmt_ratio(ratio(_rate(obest), _rate(mbest))), ""],
        ["plain output, pseudo-terminal", _mbps(pj), _mbps(pm) + " (pipe)",
         fmt_ratio(ratio(_rate(pj), _rate(pm))), fmt_rate(alone["plain_bytes_per_s"] / 1e6, "MB/s")],
        ["plain output, --no-pty (pipe)", _mbps(pn), "", fmt_ratio(ratio(_rate(pn), _rate(pm))), ""],
    ]
    t1 = {"title": "Throughput of `wrap` (8 GPUs, 20 µs per NVML call; rates end to end, start-up "
                   "included)",
          "columns": ["", "joules", "matcha", "joules ÷ matcha", "the child alone"],
          "rows": rows}
    srows = []
    for label, key in (("joules", "joules"), ("joules -o", "joules -o"), ("matcha", "matcha")):
        for r in st.get(key, []):
            if r.get("error"):
                srows.append([label, f"{r['count']:,}", fmt_s(r["wall_s"]), r["error"][:120],
                              fmt_mb(r["peak_rss_kb"])])
                continue
            srows.append([label, f"{r['count']:,}", fmt_s(r["wall_s"]),
                          fmt_rate(_rate(r), "lines/s"), fmt_mb(r["peak_rss_kb"])])
    t2 = {"title": "Step lines through `wrap`: time and memory against the number of steps",
          "columns": ["tool", "step lines", "wall", "rate", "peak RSS"], "rows": srows}
    lrows = []
    for tool in ("joules", "matcha"):
        for r in res["longline"][tool]:
            lrows.append([tool, f"{r['count'] / 2**20:,.0f} MiB", fmt_mb(r["peak_rss_kb"]),
                          fmt_s(r["wall_s"]), "" if not r.get("error") else r["error"][:100]])
    t3 = {"title": "Memory for one line without a newline",
          "columns": ["tool", "line length", "peak RSS", "wall", ""], "rows": lrows,
          "notes": ["matcha is not given a 1 GB line: its memory grows with the line (see its "
                    "rows), and 1 GB would take several GB on a machine shared with other builds."]}
    t4 = {"title": "Zeus, CodeCarbon, carbontracker",
          "columns": ["figure", "result"],
          "rows": [["step lines, plain output, long lines",
                    "cannot: they do not read the child's output (no per-step mode from a "
                    "trainer's log); the child writes straight to the terminal"]]}
    tables_out = [t1, t2, t3, t4]
    ceiling = res.get("ceiling")
    if ceiling:
        tables_out.append({
            "title": "Pass-through ceiling on this kernel: a minimal reader (read 64 KiB, write "
                     "to /dev/null) against `joules wrap`, plain output",
            "columns": ["channel", "minimal reader", "joules wrap", "joules ÷ reader"],
            "rows": [["pseudo-terminal", fmt_rate(ceiling["pty"]["bytes_per_s"] / 1e6, "MB/s"),
                      _mbps(pj), fmt_ratio(ratio(_rate(pj), ceiling["pty"]["bytes_per_s"]))],
                     ["pipe (--no-pty)", fmt_rate(ceiling["pipe"]["bytes_per_s"] / 1e6, "MB/s"),
                      _mbps(pn), fmt_ratio(ratio(_rate(pn), ceiling["pipe"]["bytes_per_s"]))]],
        })
    lat = res.get("write_latency")
    if lat:
        rows = []
        for label in ("/dev/null", "minimal reader, pty", "joules wrap", "joules wrap -o",
                      "joules wrap --no-pty"):
            r = lat.get(label)
            if r:
                rows.append([label, f"{r['p50_us']:.1f} µs", f"{r['p99_us']:.1f} µs",
                             f"{r['max_us']:.0f} µs", f"{r['late_lines']:,} of {r['lines']:,}"])
        tables_out.append({
            "title": f"The child never blocked: its own write() of each step line, "
                     f"{lat['rate_lines_per_s']:,} lines/s for {lat['seconds']} s",
            "columns": ["the child's stdout", "p50", "p99", "max", "lines written > 1 ms late"],
            "rows": rows,
        })
    return tables_out
