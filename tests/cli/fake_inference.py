#!/usr/bin/env python3
"""A fake inference server for joules' token tests: serves /metrics as vLLM, SGLang, TGI or
llama.cpp write it (docs/inference.md), with counters that advance at a known rate while it is
busy, on CLOCK_MONOTONIC (the clock joules and the fake NVML use), and can print the throughput
lines of each server's log.

    fake_inference.py --format vllm --output-rate 500 --input-rate 100 [--busy FROM:TO ...]
                      [--epoch-ns NS] [--restart-at S] [--outage FROM:TO:refuse|slow]
                      [--served-log FILE] [--log-lines] [--pad-bytes N] [--port N]

Times (--busy, --restart-at, --outage) are seconds after --epoch-ns (CLOCK_MONOTONIC
nanoseconds; default: start).  Without --busy it is busy all the time.  It prints
"listening on PORT" on stdout once it listens, and appends one JSON line per /metrics answer to
--served-log: the monotonic time it read its counters at and the counters it served.

Counters: vllm and sglang count tokens as they are generated (continuously); llamacpp and tgi
count a request's tokens when it ends, as those servers do.  Requests last REQUEST_S seconds,
one after the other per slot."""
import argparse
import json
import math
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REQUEST_S = 0.02  # one request every 20 ms while busy: per-request counts stay fine-grained


class Model:
    def __init__(self, a):
        self.a = a
        self.epoch = (a.epoch_ns / 1e9) if a.epoch_ns else time.monotonic()
        self.busy = [tuple(map(float, b.split(":"))) for b in a.busy] or [(0.0, 1e18)]
        self.restart = a.restart_at

    def now(self):
        return time.monotonic() - self.epoch

    def busy_time(self, t):
        """Seconds of busy time in [since, t], `since` the last restart before t."""
        since = self.restart if self.restart is not None and t >= self.restart else -1e18
        return sum(max(0.0, min(t, b) - max(a, since)) for a, b in self.busy)

    def is_busy(self, t):
        return any(a <= t < b for a, b in self.busy)

    def counts(self, t):
        bt = self.busy_time(t)
        if self.a.format in ("llamacpp", "tgi"):
            done = math.floor(bt / REQUEST_S + 1e-9)
            per_out = self.a.output_rate * REQUEST_S
            per_in = self.a.input_rate * REQUEST_S
            started = done + (1 if self.is_busy(t) else 0)
            return {"input": (started if self.a.format == "tgi" else done) * per_in,
                    "output": done * per_out, "requests": done}
        return {"input": math.floor(self.a.input_rate * bt), "output": math.floor(self.a.output_rate * bt),
                "requests": math.floor(bt / REQUEST_S + 1e-9)}

    def page(self, t):
        c = self.counts(t)
        running = 4 if self.is_busy(t) else 0
        f = self.a.format
        m = self.a.model.replace("\\", "\\\\").replace('"', '\\"')  # a label value, escaped
        if f == "vllm":
            lab = f'engine="0",model_name="{m}"'
            body = (
                "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
                "# TYPE vllm:num_requests_running gauge\n"
                f"vllm:num_requests_running{{{lab}}} {running:.1f}\n"
                "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.\n"
                "# TYPE vllm:prompt_tokens_total counter\n"
                f"vllm:prompt_tokens_total{{{lab}}} {c['input']:.1f}\n"
                "# HELP vllm:prompt_tokens_created Number of prefill tokens processed.\n"
                "# TYPE vllm:prompt_tokens_created gauge\n"
                f"vllm:prompt_tokens_created{{{lab}}} 1.7e+09\n"
                "# HELP vllm:generation_tokens_total Number of generation tokens processed.\n"
                "# TYPE vllm:generation_tokens_total counter\n"
                f"vllm:generation_tokens_total{{{lab}}} {c['output']:.1f}\n"
                "# HELP vllm:request_success_total Count of successfully processed requests.\n"
                "# TYPE vllm:request_success_total counter\n"
                f"vllm:request_success_total{{{lab},finished_reason=\"stop\"}} {c['requests']:.1f}\n"
                f"vllm:request_success_total{{{lab},finished_reason=\"length\"}} 0.0\n")
        elif f == "sglang":
            lab = f'model_name="{m}"'
            body = (
                "# TYPE sglang:num_running_reqs gauge\n"
                f"sglang:num_running_reqs{{{lab}}} {running:.1f}\n"
                "# TYPE sglang:prompt_tokens_total counter\n"
                f"sglang:prompt_tokens_total{{{lab}}} {c['input']:.1f}\n"
                "# TYPE sglang:generation_tokens_total counter\n"
                f"sglang:generation_tokens_total{{{lab}}} {c['output']:.1f}\n"
                "# TYPE sglang:num_requests_total counter\n"
                f"sglang:num_requests_total{{{lab}}} {c['requests']:.1f}\n")
        elif f == "tgi":
            body = (
                "# TYPE tgi_batch_current_size gauge\n"
                f"tgi_batch_current_size {running}\n"
                "# TYPE tgi_request_input_length histogram\n"
                f"tgi_request_input_length_bucket{{le=\"+Inf\"}} {c['requests']}\n"
                f"tgi_request_input_length_sum {c['input']}\n"
                f"tgi_request_input_length_count {c['requests']}\n"
                "# TYPE tgi_request_generated_tokens histogram\n"
                f"tgi_request_generated_tokens_bucket{{le=\"+Inf\"}} {c['requests']}\n"
                f"tgi_request_generated_tokens_sum {c['output']}\n"
                f"tgi_request_generated_tokens_count {c['requests']}\n"
                "# TYPE tgi_request_success counter\n"
                f"tgi_request_success {c['requests']}\n")
        elif f == "llamacpp":
            body = ""
            for kind, name, help_, value in (
                    ("counter", "prompt_tokens_total", "Number of prompt tokens processed.", c["input"]),
                    ("counter", "tokens_predicted_total", "Number of generation tokens processed.",
                     c["output"]),
                    ("gauge", "requests_processing", "Number of requests processing.", running)):
                body += (f"# HELP llamacpp:{name} {help_}\n# TYPE llamacpp:{name} {kind}\n"
                         f"llamacpp:{name} {value:.0f}\n")
        elif f == "custom":
            body = ("# TYPE my_generated_tokens_total counter\n"
                    f"my_generated_tokens_total{{kind=\"out\",model_name=\"{m}\"}} {c['output']}\n"
                    f"my_generated_tokens_total{{kind=\"other\"}} 12345\n"
                    f"my_prompt_tokens_total {c['input']}\n")
        elif f == "unknown":
            body = "# TYPE node_cpu_seconds_total counter\nnode_cpu_seconds_total{cpu=\"0\"} 5\n"
        elif f == "html":
            body = "<!DOCTYPE html>\n<html><body>It works!</body></html>\n"
        elif f == "huge":
            body = "x_total 1\n" + "# " + "x" * (17 << 20) + "\n"
        else:
            raise SystemExit(f"unknown format {f}")
        if self.a.pad_bytes:
            # Histograms as vLLM writes them (many buckets, per model), to reach a page size.
            n = 0
            pad = []
            size = len(body)
            while size < self.a.pad_bytes:
                line = (f'vllm:e2e_request_latency_seconds_bucket{{engine="0",le="{n * 0.25:.2f}",'
                        f'model_name="{m}"}} {n * 3.0:.1f}\n')
                pad.append(line)
                size += len(line)
                n += 1
            body += "# TYPE vllm:e2e_request_latency_seconds histogram\n" + "".join(pad)
        return body, c


def log_line(fmt, t_prev, t, model):
    """The throughput line each server prints, for the tokens of [t_prev, t]."""
    a = model.a
    c0, c1 = model.counts(t_prev), model.counts(t)
    span = max(t - t_prev, 1e-9)
    if fmt == "vllm":
        return (f"INFO 01-01 00:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: "
                f"{(c1['input'] - c0['input']) / span:.1f} tokens/s, Avg generation throughput: "
                f"{(c1['output'] - c0['output']) / span:.1f} tokens/s, Running: 4 reqs, Waiting: 0 "
                f"reqs, GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%")
    if fmt == "sglang":
        return (f"[2025-01-01 00:00:00 TP0] Decode batch. #running-req: 4, #token: 100, token "
                f"usage: 0.00, cuda graph: True, gen throughput (token/s): "
                f"{(c1['output'] - c0['output']) / span:.2f}, #queue-req: 0")
    raise SystemExit(f"no log lines for {fmt}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--format", required=True)
    p.add_argument("--model", default="fake/model-7b")
    p.add_argument("--output-rate", type=float, default=500.0)
    p.add_argument("--input-rate", type=float, default=100.0)
    p.add_argument("--busy", action="append", default=[])
    p.add_argument("--epoch-ns", type=int, default=0)
    p.add_argument("--restart-at", type=float)
    p.add_argument("--outage", action="append", default=[])
    p.add_argument("--served-log")
    p.add_argument("--log-lines", type=float, default=0.0, help="print stats lines every S seconds")
    p.add_argument("--pad-bytes", type=int, default=0)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--exit-after", type=float, default=0.0)
    a = p.parse_args()
    model = Model(a)
    outages = []
    for o in a.outage:
        lo, hi, how = o.split(":")
        outages.append((float(lo), float(hi), how))
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            t = model.now()
            for lo, hi, how in outages:
                if lo <= t < hi:
                    if how == "slow":
                        time.sleep(hi - t + 1.0)
                    else:
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404)
                return
            read_at = time.monotonic()
            body, counts = model.page(model.now())
            data = body.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            if a.served_log:
                with lock, open(a.served_log, "a") as f:
                    f.write(json.dumps({"t": read_at, **counts}) + "\n")

    server = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    server.daemon_threads = True
    print(f"listening on {server.server_address[1]}", flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    start = time.monotonic()
    if a.log_lines > 0:
        prev = model.now()
        while not a.exit_after or time.monotonic() - start < a.exit_after:
            time.sleep(a.log_lines)
            t = model.now()
            print(log_line(a.format, prev, t, model), flush=True)
            prev = t
    elif a.exit_after:
        time.sleep(a.exit_after)
    else:
        threading.Event().wait()


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(0)
