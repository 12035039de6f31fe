"""`/metrics` scrape latency, p50 and p99, under 50 concurrent scrapers (each scraping every
100 ms, as Prometheus does at a short interval), with bench/exposition's joules_scrape_load.

joules: `joules serve` on the fake NVML (8 GPUs, 20 µs per NVML call), keep-alive connections
(as Prometheus keeps them) and a new connection per scrape.  matcha: `matcha run --prometheus
127.0.0.1:PORT -- sleep` on the same fake; its server speaks HTTP/1.0 and closes every
connection, so each of its scrapes includes a connect, like joules' new-connection row; it reads
the GPUs inside each scrape.  Scaling: 1 and 64 GPUs.  The scrapers share the 2 cores with the
server."""
from __future__ import annotations

import re
import subprocess
import time

from .common import (JOULES, SCRAPE_LOAD, VENV, Watched, constant_scenario, fake_env, free_port,
                     ratio)
from .render import fmt_mb, fmt_ms, fmt_pct, fmt_ratio, fmt_rate

NAME = "scrape"
LINE = re.compile(r"scrapes=(\d+) failures=(\d+) rate=([\d.]+)/s p50=([\d.]+)ms p90=([\d.]+)ms "
                  r"p99=([\d.]+)ms max=([\d.]+)ms")


def _wait_port(w: Watched, port: int | None, timeout=60.0) -> int | None:
    """The port a server listens on: given, or read from joules serve's stderr line."""
    import socket
    deadline = time.monotonic() + timeout
    if port is None:
        buf = b""
        while time.monotonic() < deadline and b"/metrics" not in buf:
            ch = w.proc.stderr.read1(4096) if hasattr(w.proc.stderr, "read1") else w.proc.stderr.read(1)
            if not ch:
                return None
            buf += ch
        m = re.search(rb"http://[^:]+:(\d+)/metrics", buf)
        if not m:
            return None
        port = int(m.group(1))
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return port
        except OSError:
            time.sleep(0.2)
    return None


def _load(port, seconds, new_connection):
    cmd = [str(SCRAPE_LOAD), "127.0.0.1", str(port), "--clients", "50", "--seconds", str(seconds),
           "--pause-ms", "100"] + (["--new-connection"] if new_connection else [])
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 120)
    m = LINE.search(p.stdout)
    if not m:
        return {"error": (p.stdout + p.stderr).strip()[-300:]}
    k = ("scrapes", "failures", "rate_per_s", "p50_ms", "p90_ms", "p99_ms", "max_ms")
    vals = [int(m.group(1)), int(m.group(2))] + [float(m.group(i)) for i in range(3, 8)]
    return dict(zip(k, vals))


def _server(ctx, tool, gpus, seconds):
    env = fake_env(constant_scenario(gpus))
    if tool == "joules":
        argv, port = [str(JOULES), "serve", "--listen", "127.0.0.1:0"], None
    else:
        port = free_port()
        argv = [str(VENV / "bin" / "matcha"), "run", "--prometheus", f"127.0.0.1:{port}", "--",
                "sleep", "3600"]
    w = Watched(tool, argv, env, stderr=subprocess.PIPE, period=0.25,
                workload="sleep" if tool == "matcha" else None)
    return w, _wait_port(w, port)


def _stop(w):
    import signal
    w.kill(signal.SIGTERM)
    if w.proc.stderr is not None:
        w.proc.stderr.close()
        w.proc.stderr = None
    w.wait(timeout=30)


def run(ctx) -> dict:
    secs = 3 if ctx.quick else 10
    ssecs = 3 if ctx.quick else 5
    out = {}
    plan = [("joules", 8, False, secs), ("joules", 8, True, secs), ("matcha", 8, True, secs),
            ("joules", 1, False, ssecs), ("joules", 64, False, ssecs),
            ("matcha", 1, True, ssecs), ("matcha", 64, True, ssecs)]
    servers = {}
    for tool, gpus, new_conn, s in plan:
        key = (tool, gpus)
        if key not in servers:
            # One server per tool and GPU count at a time; stop the previous one first.
            for k in list(servers):
                _stop(servers.pop(k)[0])
            servers[key] = _server(ctx, tool, gpus, s)
            time.sleep(2.0)  # let the sampler publish its first readings
        w, port = servers[key]
        label = f"{tool} {gpus} {'new' if new_conn else 'keep'}"
        if port is None:
            out[label] = {"error": "the server did not start: " + (w.stderr_text or "")[-200:]}
            continue
        t_a = time.monotonic()
        r = _load(port, s, new_conn)
        t_b = time.monotonic()
        # The server's own cost while it was being scraped, and its memory after.
        r["server_cpu_per_wall_s"] = w.cpu_per_wall_s(t_a + 0.5, t_b - 0.25)
        late = w.at(t_b)
        r["server_rss_kb"] = late.rss_kb if late else None
        r.update({"tool": tool, "gpus": gpus,
                  "mode": "new-connection" if new_conn else "keep-alive", "seconds": s})
        out[label] = r
        ctx.log(f"scrape: {label}: {r}")
    for k in list(servers):
        _stop(servers.pop(k)[0])
    return {"runs": out,
            "cannot": {"zeus": "no /metrics endpoint: pushes to a Prometheus Pushgateway",
                       "codecarbon": "no /metrics endpoint: pushes to a Prometheus Pushgateway",
                       "carbontracker": "no Prometheus output"},
            "conditions": {"clients": 50, "pause_ms": 100, "seconds": secs, "latency_us": 20,
                           "joules": "joules serve (1 s sampler)",
                           "matcha": "matcha run --prometheus (reads NVML per scrape)"}}


def tables(res: dict) -> list[dict]:
    r = res["runs"]

    def row(label, key):
        x = r.get(key)
        if x is None:
            return None
        if "error" in x:
            return [label, "failed: " + x["error"][:120], "", "", "", "", "", ""]
        cpu = x.get("server_cpu_per_wall_s")
        return [label, fmt_ms(x["p50_ms"] / 1000), fmt_ms(x["p99_ms"] / 1000),
                fmt_ms(x["max_ms"] / 1000), fmt_rate(x["rate_per_s"], "/s"),
                f"{x['scrapes']:,} ({x['failures']} failed)",
                "–" if cpu is None else fmt_pct(cpu * 100), fmt_mb(x.get("server_rss_kb"))]

    rows = [x for x in (
        row("joules serve, keep-alive", "joules 8 keep"),
        row("joules serve, new connection per scrape", "joules 8 new"),
        row("matcha run --prometheus (new connection per scrape: HTTP/1.0)", "matcha 8 new"),
    ) if x]
    j, m = r.get("joules 8 new", {}), r.get("matcha 8 new", {})
    rat = [["p50, matcha ÷ joules (new connections)", fmt_ratio(ratio(m.get("p50_ms"), j.get("p50_ms")))],
           ["p99, matcha ÷ joules (new connections)", fmt_ratio(ratio(m.get("p99_ms"), j.get("p99_ms")))]]
    srows = []
    for tool, mode in (("joules", "keep"), ("matcha", "new")):
        cells = []
        for g in (1, 8, 64):
            x = r.get(f"{tool} {g} {mode}")
            cells.append("–" if not x or "error" in x else
                         f"{fmt_ms(x['p50_ms'] / 1000)} / {fmt_ms(x['p99_ms'] / 1000)}")
        srows.append([f"{tool} ({'keep-alive' if mode == 'keep' else 'new connection'})"] + cells)
    notes = ["Zeus, CodeCarbon, carbontracker: cannot — " + "; ".join(
        f"{k}: {v}" for k, v in res["cannot"].items()) + "."]
    return [
        {"title": "`/metrics` latency, 50 concurrent scrapers each every 100 ms, 8 GPUs",
         "columns": ["server", "p50", "p99", "max", "scrapes/s", "scrapes",
                     "server CPU (% of a core)", "server RSS after"], "rows": rows},
        {"title": "Ratios", "columns": ["", ""], "rows": rat, "notes": notes},
        {"title": "Scrape latency p50 / p99 against the number of GPUs",
         "columns": ["server", "1 GPU", "8 GPUs", "64 GPUs"], "rows": srows},
    ]
