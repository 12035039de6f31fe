"""Token sources (`--tokens-from`): the CPU one scrape of a 200 kB vLLM page costs joules, and the
error of J/output token on the fake.

Scrape cost: `joules serve` over one fake GPU (readings every second) runs with and without
`--tokens-from` on the test suite's fake vLLM server (tests/cli/fake_inference.py) serving a page
padded to 200 kB with histogram buckets as vLLM writes them, scraped every 100 ms; the two runs
alternate, and the CPU time of the serve process (utime + stime from /proc, after a 2 s start)
per wall second with the page, less without it, over the scrapes per second the server answered,
is the CPU per scrape: the request (libcurl), the parse of the whole page, server recognition,
counter deltas and attribution.

J/token error: `joules run --tokens-from URL -- sleep 10` over two fake H100s drawing 300 W each
(energy counter every 100 ms), against each server format counting 500 output and 100 input
tokens a second (llama.cpp and TGI when each 20 ms request ends); and `joules wrap` of the fake
vLLM printing its stats line every second (estimated from the log).  The truth is 600 W / 500
tokens/s = 1.2 J/output token; the error is also given against the tokens the server's pages
counted between the first and the last scrape (what joules divided by), which leaves the server's
own rounding out.  No peer reads an inference server's tokens: nothing to compare with."""
from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

from .common import (JOULES, ROOT, constant_scenario, fake_env, process_cpu_ns, rmtree,
                     summary)
from .render import fmt_ms, fmt_pct, fmt_spread

NAME = "inference"
USES_PEERS = False  # nothing of bench/.venv is needed
BUILD_TARGETS: tuple = ()  # nothing beyond joules and the fake NVML
FAKE_SERVER = ROOT / "tests" / "cli" / "fake_inference.py"
PAGE_BYTES = 200_000
SCRAPE_MS = 100
WATTS = 300.0
GPUS = 2
OUTPUT_RATE = 500.0
TRUTH_J = GPUS * WATTS / OUTPUT_RATE
FORMATS = ("vllm", "sglang", "tgi", "llamacpp")
WARM_S = 2.0


class _Server:
    def __init__(self, work: pathlib.Path, fmt: str, *args: str, epoch_ns: int | None = None):
        self.log = work / f"served-{fmt}-{time.monotonic_ns()}.jsonl"
        cmd = [sys.executable, str(FAKE_SERVER), "--format", fmt, "--served-log", str(self.log),
               *args]
        if epoch_ns is not None:
            cmd += ["--epoch-ns", str(epoch_ns)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True,
                                     start_new_session=True)
        self.url = f"http://127.0.0.1:{int(self.proc.stdout.readline().split()[-1])}/metrics"

    def served(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


def _serve_cpu(env: dict, seconds: float, url: str | None, server: _Server | None) -> dict:
    """CPU seconds per wall second of `joules serve` over `seconds`, and the scrapes answered."""
    args = [str(JOULES), "serve", "--listen", "127.0.0.1:0", "--interval", "1000"]
    if url:
        args += ["--tokens-from", url, "--tokens-interval", str(SCRAPE_MS)]
    p = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
    try:
        while "serving" not in (p.stderr.readline() or "serving"):
            pass
        time.sleep(WARM_S)
        c0, t0 = process_cpu_ns(p.pid), time.monotonic()
        n0 = len(server.served()) if server else 0
        time.sleep(seconds)
        c1, t1 = process_cpu_ns(p.pid), time.monotonic()
        n1 = len(server.served()) if server else 0
    finally:
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=30)
    return {"cpu_per_s": (c1 - c0) / 1e9 / (t1 - t0), "scrapes_per_s": (n1 - n0) / (t1 - t0)}


def _scrape_cost(ctx, work: pathlib.Path) -> dict:
    reps = 1 if ctx.quick else 3
    seconds = 3.0 if ctx.quick else 10.0
    env = fake_env(constant_scenario(1, WATTS))
    server = _Server(work, "vllm", "--pad-bytes", str(PAGE_BYTES))
    try:
        import urllib.request
        with urllib.request.urlopen(server.url, timeout=10) as r:
            page_bytes = len(r.read())
        per_scrape, with_cpu, without_cpu, rates = [], [], [], []
        for i in range(reps):
            runs = {}
            for mode in (("with", "without") if i % 2 == 0 else ("without", "with")):
                runs[mode] = _serve_cpu(env, seconds, server.url if mode == "with" else None,
                                        server if mode == "with" else None)
            extra = runs["with"]["cpu_per_s"] - runs["without"]["cpu_per_s"]
            rate = runs["with"]["scrapes_per_s"]
            per_scrape.append(extra / rate if rate > 0 else None)
            with_cpu.append(runs["with"]["cpu_per_s"])
            without_cpu.append(runs["without"]["cpu_per_s"])
            rates.append(rate)
            ctx.log(f"scrape cost run {i + 1}: {extra * 1000:.2f} ms CPU/s at {rate:.1f} scrapes/s")
    finally:
        server.stop()
    return {"page_bytes": page_bytes, "interval_ms": SCRAPE_MS, "seconds": seconds,
            "cpu_per_scrape_s": summary(per_scrape), "serve_cpu_per_s_with": summary(with_cpu),
            "serve_cpu_per_s_without": summary(without_cpu), "scrapes_per_s": summary(rates)}


def _last_run_record(path: pathlib.Path) -> dict | None:
    recs = [json.loads(line) for line in path.read_text().splitlines()
            if '"type":"inference"' in line]
    runs = [r for r in recs if r["window"] == "run"]
    return runs[-1] if runs else None


def _errors(ctx, work: pathlib.Path) -> dict:
    reps = 1 if ctx.quick else 3
    seconds = 4 if ctx.quick else 10
    out: dict = {}
    for fmt in (*FORMATS, "vllm log"):
        truth_err, served_err = [], []
        for i in range(reps):
            epoch = time.monotonic_ns() - 10 * 10**9
            env = fake_env(constant_scenario(GPUS, WATTS), epoch_ns=epoch)
            records = work / f"{fmt.replace(' ', '-')}-{i}.jsonl"
            if fmt == "vllm log":
                cmd = [str(JOULES), "wrap", "-q", "-o", str(records), "--", sys.executable,
                       str(FAKE_SERVER), "--format", "vllm", "--output-rate", str(OUTPUT_RATE),
                       "--log-lines", "1", "--exit-after", str(seconds)]
                subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, timeout=300)
                served = []
            else:
                server = _Server(work, fmt, "--output-rate", str(OUTPUT_RATE), epoch_ns=epoch)
                try:
                    subprocess.run([str(JOULES), "run", "-q", "--tokens-from", server.url, "-o",
                                    str(records), "--", "sleep", str(seconds)], env=env,
                                   timeout=300)
                    served = server.served()
                finally:
                    server.stop()
            rec = _last_run_record(records)
            j = rec and rec.get("energy_per_output_token_j")
            if not j:
                ctx.log(f"{fmt}: no J/token in run {i + 1}")
                continue
            truth_err.append((j / TRUTH_J - 1) * 100)
            if len(served) >= 2:
                tokens = served[-1]["output"] - served[0]["output"]
                span = served[-1]["t"] - served[0]["t"]
                served_err.append((j / (GPUS * WATTS * span / tokens) - 1) * 100)
        out[fmt] = {"error_percent": summary(truth_err),
                    "error_vs_served_percent": summary(served_err)}
        ctx.log(f"{fmt}: J/token error {out[fmt]['error_percent']['median']}")
    return out


def run(ctx) -> dict:
    work = ctx.tmpdir("inference")
    try:
        return {"scrape": _scrape_cost(ctx, work), "errors": _errors(ctx, work),
                "truth_j_per_token": TRUTH_J}
    finally:
        rmtree(work)


def tables(res: dict) -> list[dict]:
    s = res["scrape"]
    cost = s["cpu_per_scrape_s"]
    scrape = {
        "title": f"Cost of a scrape: a {s['page_bytes'] / 1000:.0f} kB vLLM page every "
                 f"{s['interval_ms']} ms, `joules serve` on one fake GPU",
        "columns": ["figure", "median", "spread", "runs"],
        "rows": [
            ["CPU per scrape (request, parse, recognition, attribution)",
             fmt_ms(cost["median"]), fmt_spread(cost, fmt_ms), str(cost["n"])],
            ["serve's CPU with the scrapes, % of a core",
             fmt_pct(s["serve_cpu_per_s_with"]["median"] * 100),
             fmt_spread(s["serve_cpu_per_s_with"], lambda x: fmt_pct(x * 100)),
             str(s["serve_cpu_per_s_with"]["n"])],
            ["serve's CPU without, % of a core",
             fmt_pct(s["serve_cpu_per_s_without"]["median"] * 100),
             fmt_spread(s["serve_cpu_per_s_without"], lambda x: fmt_pct(x * 100)),
             str(s["serve_cpu_per_s_without"]["n"])],
            ["scrapes answered per second", f"{s['scrapes_per_s']['median']:.1f}",
             fmt_spread(s["scrapes_per_s"], lambda x: f"{x:.1f}"), str(s["scrapes_per_s"]["n"])],
        ],
    }
    rows = []
    for fmt, e in res["errors"].items():
        a, b = e["error_percent"], e["error_vs_served_percent"]
        signed = lambda x: fmt_pct(x, signed=True)  # noqa: E731
        rows.append([fmt, "estimated" if fmt.endswith("log") else "counter",
                     signed(a["median"]) if a["n"] else "–", fmt_spread(a, signed),
                     signed(b["median"]) if b["n"] else "–", str(a["n"])])
    errors = {
        "title": f"J/output token on the fake: {GPUS} GPUs at {WATTS:.0f} W, "
                 f"{OUTPUT_RATE:.0f} output tokens/s, truth {res['truth_j_per_token']:g} J/token",
        "columns": ["server", "tokens", "error", "spread", "error against the pages' counts",
                    "runs"],
        "rows": rows,
    }
    return [scrape, errors]
