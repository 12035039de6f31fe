"""Joules per token of inference servers (`--tokens-from`, docs/inference.md), black-box: a fake
server of each kind (tests/cli/fake_inference.py) counts tokens at a known rate while fake GPUs
(tests/fake_nvml) draw a known power; joules' figures are checked against both."""
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import JOULES, ROOT, SANITIZED, fake_gpus, joules, read_jsonl, wait_for
from exporter_util import clean_env, one, parse, serve, series

FAKE = ROOT / "tests" / "cli" / "fake_inference.py"
PROMTOOL = shutil.which("promtool")
INTERVAL_MS = 200
# The measured command's length: long enough that a boundary's error stays far below 1 %.
RUN_S = 8 if SANITIZED else 6


class Server:
    """A fake inference server, our child in its own process group."""

    def __init__(self, tmp, fmt, *args, epoch_ns=None, name="served"):
        self.log = pathlib.Path(tmp) / f"{name}.jsonl"
        cmd = [sys.executable, str(FAKE), "--format", fmt, "--served-log", str(self.log), *args]
        if epoch_ns is not None:
            cmd += ["--epoch-ns", str(epoch_ns)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True,
                                     start_new_session=True)
        line = self.proc.stdout.readline()
        assert line.startswith("listening on "), line
        self.port = int(line.split()[-1])
        self.url = f"http://127.0.0.1:{self.port}/metrics"

    def served(self):
        return [json.loads(l) for l in self.log.read_text().splitlines()] if self.log.exists() else []

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


@pytest.fixture
def servers(tmp_path):
    started = []

    def start(fmt, *args, **kw):
        s = Server(tmp_path, fmt, *args, name=f"served{len(started)}", **kw)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


def h100(watts):
    return {"name": "NVIDIA H100 80GB HBM3", "architecture": "hopper",
            "power": {"type": "constant", "watts": watts}}


def inference_records(path, window="run"):
    return [r for r in read_jsonl(path) if r["type"] == "inference" and r["window"] == window]


def run_with(url_args, env, out, seconds=RUN_S, extra=()):
    r = joules("run", *url_args, "--tokens-interval", INTERVAL_MS, "-o", out, *extra, "--",
               "sleep", seconds, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    return r


def rate_increase(served, key):
    """The increase of a counter over the served pages, as Prometheus' rate() counts it."""
    total = 0.0
    for a, b in zip(served, served[1:]):
        total += b[key] - a[key] if b[key] >= a[key] else b[key]
    return total


@pytest.mark.parametrize("fmt", ["vllm", "sglang", "tgi", "llamacpp", "custom"])
def test_joules_per_token_within_1_percent_for_each_server(servers, tmp, fmt):
    # Two GPUs at 300 W; the server makes 500 output and 100 input tokens a second.
    env, epoch = fake_gpus({"devices": [h100(300), h100(300)]})
    s = servers(fmt, "--output-rate", "500", "--input-rate", "100", epoch_ns=epoch)
    args = ["--tokens-from", s.url]
    if fmt == "custom":
        args += ["--tokens-metric", 'my_generated_tokens_total{kind="out"}',
                 "--tokens-metric", "input=my_prompt_tokens_total"]
    out = tmp / "run.jsonl"
    r = run_with(args, env, out)
    [rec] = inference_records(out)
    assert rec["source"]["server"] == fmt
    assert rec["source"]["gpus"] == [0, 1]
    assert rec["source"]["method"] == "counter"
    if fmt in ("vllm", "sglang", "custom"):
        assert rec["source"]["model_name"] == "fake/model-7b"
    served = s.served()
    assert rec["scrapes"] == len(served) and rec["scrape_errors"] == 0 and rec["gaps"] == 0
    # The truth of the scraped instants: the scenario's energy over the tokens the pages counted.
    span = served[-1]["t"] - served[0]["t"]
    tokens = served[-1]["output"] - served[0]["output"]
    assert rec["output_tokens"] == tokens
    assert rec["energy_per_output_token_j"] == pytest.approx(600.0 * span / tokens, rel=0.01)
    # And of the server: 600 W over 500 tokens/s.
    assert rec["energy_per_output_token_j"] == pytest.approx(1.2, rel=0.01)
    assert rec["energy_per_token_j"] == pytest.approx(1.0, rel=0.01)
    assert rec["output_tokens_per_j"] == pytest.approx(1 / 1.2, rel=0.01)
    # Busy all along: at most a sliver counts as idle, where two scrapes of a loaded machine came
    # so close together that the page's count had not moved between them.
    assert rec["idle_energy_ratio"] < 0.01
    if fmt in ("vllm", "sglang", "tgi"):
        # A request every 20 ms: 12 J each.
        assert rec["energy_per_request_j"] == pytest.approx(12.0, rel=0.02)
    summary = [l for l in r.stderr.splitlines() if "J/output token" in l]
    assert len(summary) == 1, r.stderr
    # The summary rounds to 3 significant digits what the record holds: 1.2 J within 1 %.
    at_load = re.search(r"([0-9.]+) J/output token at load", summary[0])
    assert at_load and float(at_load.group(1)) == pytest.approx(1.2, rel=0.01), summary[0]


def test_idle_energy_is_reported_apart(servers, tmp):
    # Busy (500 W a GPU) from 1 to 4 s and 7 to 9 s after the start, idle (100 W) otherwise.
    now = 10.0  # fake_gpus puts scenario time 0 ten seconds back
    busy = [(now + 1, now + 4), (now + 7, now + 9)]
    points = [[0, 100]]
    for a, b in busy:
        points += [[a, 500], [b, 100]]
    power = {"type": "steps", "points": points}
    dev = {"name": "NVIDIA H100 80GB HBM3", "architecture": "hopper", "power": power}
    env, epoch = fake_gpus({"devices": [dev, dict(dev)]}, epoch_before_s=now)
    s = servers("vllm", "--output-rate", "500", *[f"--busy={a}:{b}" for a, b in busy],
                epoch_ns=epoch)
    out = tmp / "run.jsonl"
    run_with(["--tokens-from", s.url], env, out, seconds=10)
    [rec] = inference_records(out)
    served = s.served()
    t0, t1 = served[0]["t"] - epoch / 1e9, served[-1]["t"] - epoch / 1e9
    busy_s = sum(max(0.0, min(b, t1) - max(a, t0)) for a, b in busy)
    idle_s = (t1 - t0) - busy_s
    # An interval that holds the start or the end of a busy stretch is active as a whole: at
    # most one interval of idle power moves to the active side at each of the four edges.
    edge_j = 4 * (INTERVAL_MS / 1000 + 0.05) * 200
    assert rec["idle_energy_j"] == pytest.approx(idle_s * 200, abs=edge_j)
    assert rec["idle_energy_j"] <= idle_s * 200 + 1
    assert rec["active_energy_j"] == pytest.approx(busy_s * 1000, abs=edge_j)
    assert rec["energy_per_output_token_j"] == pytest.approx(2.0, rel=edge_j / (busy_s * 1000))
    assert rec["idle_s"] == pytest.approx(idle_s, abs=4 * INTERVAL_MS / 1000 + 0.2)
    assert rec["idle_energy_ratio"] == pytest.approx(
        rec["idle_energy_j"] / (rec["idle_energy_j"] + rec["active_energy_j"]))
    # The GPUs' energy between the first scrape and the last is placed by the sampler's
    # accounting at each scrape's instant, as a window boundary is: the truth's, to within what
    # moving each end by 10 ms (half a round trip on a loaded machine) changes.
    truth_j = 2 * sum(w * max(0.0, min(b, t1) - max(a, t0))
                      for (a, w), (b, _) in zip(points, points[1:] + [[1e9, 0]]))
    assert rec["energy_j"] == pytest.approx(truth_j, abs=2 * 0.010 * 1000)


def test_a_restart_is_handled_as_prometheus_rate_does(servers, tmp):
    env, epoch = fake_gpus({"devices": [h100(400)]})
    s = servers("vllm", "--output-rate", "400", "--restart-at", "13", epoch_ns=epoch)
    out = tmp / "run.jsonl"
    run_with(["--tokens-from", s.url], env, out)
    [rec] = inference_records(out)
    served = s.served()
    assert any(b["output"] < a["output"] for a, b in zip(served, served[1:])), "no restart seen"
    assert rec["counter_resets"] >= 1 and rec["gaps"] == 0
    tokens = rate_increase(served, "output")
    assert rec["output_tokens"] == tokens
    span = served[-1]["t"] - served[0]["t"]
    assert rec["energy_per_output_token_j"] == pytest.approx(400 * span / tokens, rel=0.01)
    # What rate() cannot see (the tokens between the last page before the restart and the
    # restart) is at most one interval's worth.
    assert rec["energy_per_output_token_j"] == pytest.approx(
        1.0, rel=(INTERVAL_MS / 1000 + 0.05) / (span - 1))


@pytest.mark.parametrize("how", ["refuse", "slow"])
def test_an_outage_is_a_gap_said_once_never_a_zero_or_a_spike(servers, tmp, how):
    env, epoch = fake_gpus({"devices": [h100(300), h100(300)]})
    s = servers("sglang", "--output-rate", "500", f"--outage=12:14:{how}", epoch_ns=epoch)
    out = tmp / "run.jsonl"
    r = run_with(["--tokens-from", s.url], env, out, seconds=7)
    [rec] = inference_records(out)
    assert rec["scrape_errors"] >= 1 and rec["gaps"] >= 2
    # The server did not answer for 2 s: the gap is that, to an interval (and a timeout) each side.
    assert rec["gap_s"] == pytest.approx(2.0, abs=2 * INTERVAL_MS / 1000 + 1.0)
    assert rec["gap_energy_j"] == pytest.approx(600 * rec["gap_s"], rel=0.02)
    assert rec["energy_per_output_token_j"] == pytest.approx(1.2, rel=0.01)
    periods = inference_records(out, "period")
    assert sum(p["output_tokens"] for p in periods) == rec["output_tokens"]
    notes = [l for l in r.stderr.splitlines() if s.url in l]
    down = [l for l in notes if "no tokens are counted until it answers" in l]
    assert len(down) == 1, r.stderr
    assert sum("answering again after" in l for l in notes) == 1, r.stderr
    assert "gap" in r.stderr and "not attributed" in r.stderr


def test_several_servers_each_on_its_own_gpus(servers, tmp):
    env, epoch = fake_gpus({"devices": [h100(300), h100(500)]})
    a = servers("vllm", "--output-rate", "300", epoch_ns=epoch)
    b = servers("llamacpp", "--output-rate", "250", epoch_ns=epoch)
    out = tmp / "run.jsonl"
    run_with(["--tokens-from", f"{a.url}@gpus=0", "--tokens-from", f"{b.url}@gpus=1"], env, out)
    recs = {r["source"]["server"]: r for r in inference_records(out)}
    assert recs["vllm"]["source"]["gpus"] == [0] and recs["llamacpp"]["source"]["gpus"] == [1]
    assert recs["vllm"]["energy_per_output_token_j"] == pytest.approx(1.0, rel=0.01)
    assert recs["llamacpp"]["energy_per_output_token_j"] == pytest.approx(2.0, rel=0.01)


@pytest.mark.parametrize("args,message", [
    (["--tokens-from", "ftp://127.0.0.1/metrics"], "not an http:// or https:// URL"),
    (["--tokens-from", "http://user@127.0.0.1/metrics"], "no user@ in the URL"),
    (["--tokens-from", "http://127.0.0.1:1/metrics@gpus=0,x"], "'x' in @gpus= is not a GPU index"),
    (["--tokens-from", "http://127.0.0.1:1/metrics@gpus=7"], "GPU 7 is not one this session reads"),
    (["--tokens-from", "http://127.0.0.1:1/a", "--tokens-from", "http://127.0.0.1:2/a@gpus=1"],
     "with several servers, give each its GPUs"),
    (["--tokens-from", "http://127.0.0.1:1/a@gpus=0,1", "--tokens-from",
      "http://127.0.0.1:2/a@gpus=1"], "GPU 1 is in"),
    (["--tokens-from", "http://127.0.0.1:1/a", "--tokens-metric", "x{a=b}"],
     "expected [KIND=]NAME[{LABEL=\"VALUE\",...}]"),
    (["--tokens-metric", "x_total"], "--tokens-from"),
    (["--tokens-from", "http://127.0.0.1:1/a", "--tokens-interval", "50"], "--tokens-interval"),
])
def test_bad_input_is_one_line_exit_2_nothing_started_nothing_truncated(tmp, args, message):
    out = tmp / "keep.jsonl"
    out.write_text("precious\n")
    marker = tmp / "started"
    r = joules("run", "--backend", "sim", "--sim-gpus", "2", "-o", out, *args, "--", "touch",
               marker)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert out.read_text() == "precious\n" and not marker.exists()


@pytest.mark.parametrize("fmt,message", [
    ("html", "not Prometheus text: line 1: expected a metric name"),
    ("unknown", "no token counter joules knows"),
    ("huge", "the page is larger than 16777216 bytes"),
])
def test_a_page_joules_cannot_read_is_one_clear_line(servers, tmp, fmt, message):
    env, epoch = fake_gpus({"devices": [h100(300)]})
    s = servers(fmt, epoch_ns=epoch)
    out = tmp / "run.jsonl"
    r = run_with(["--tokens-from", s.url], env, out, seconds=2)
    lines = [l for l in r.stderr.splitlines() if s.url in l and l.startswith("joules: note:")]
    assert len(lines) == 1, r.stderr
    assert message in lines[0]
    assert "J/output token" not in r.stderr
    summary = r.stderr.splitlines()[-1]
    assert f"{s.url}: no token counted: {message}" in summary, summary
    assert not inference_records(out)  # nothing was counted: no figure at all, not a zero
    end = [x for x in read_jsonl(out) if x["type"] == "session_end"]
    assert end and end[0]["exit_code"] == 0


def test_serve_exposes_the_inference_series_and_promtool_accepts_them(servers, tmp):
    env, epoch = fake_gpus({"devices": [h100(300), h100(300)]})
    s = servers("vllm", "--output-rate", "500", "--model", 'quote"d\\model', epoch_ns=epoch)
    p = serve("--interval", 100, "--tokens-from", s.url, "--tokens-interval", INTERVAL_MS,
              env=env)
    try:
        def ready():
            m = parse(p.scrape())
            return series(m, "joules_inference_energy_per_output_token_joules", window="1m")

        assert wait_for(ready, timeout=30)
        text = p.scrape()
        m = parse(text)
        labels = {"server": "vllm", "model_name": 'quote"d\\model', "endpoint": s.url,
                  "gpus": "0,1", "method": "counter"}
        assert one(m, "joules_inference_up", **labels) == 1
        assert one(m, "joules_inference_tokens_total", kind="output", **labels) > 0
        assert one(m, "joules_inference_tokens_total", kind="input", **labels) > 0
        for state in ("active", "idle", "gap"):
            one(m, "joules_inference_energy_joules_total", state=state, **labels)
        for w in ("live", "1m", "5m", "run"):
            j = one(m, "joules_inference_energy_per_output_token_joules", window=w, **labels)
            assert j == pytest.approx(1.2, rel=0.05)
        assert 'model_name="quote\\"d\\\\model"' in text
        if PROMTOOL:
            r = subprocess.run([PROMTOOL, "check", "metrics"], input=text.encode(),
                               capture_output=True, timeout=60)
            assert r.returncode == 0, (r.stdout + r.stderr).decode()
            assert (r.stdout + r.stderr).decode().strip() == ""
    finally:
        p.kill()


@pytest.mark.parametrize("fmt,truth", [("vllm", 1.2), ("sglang", 1.2)])
def test_wrap_of_a_server_estimates_tokens_from_its_log_lines(tmp, fmt, truth):
    env, _ = fake_gpus({"devices": [h100(300), h100(300)]})
    out = tmp / "run.jsonl"
    r = joules("wrap", "--interval", 50, "-o", out, "--", sys.executable, FAKE, "--format", fmt,
               "--output-rate", "500", "--log-lines", "0.5", "--exit-after", "5", env=env,
               timeout=120)
    assert r.returncode == 0, r.stderr
    [rec] = inference_records(out)
    assert rec["source"]["method"] == "estimated" and rec["source"]["endpoint"] == "log"
    assert rec["source"]["server"] == fmt
    # Rates printed to 0.1 token/s, spans from when the lines arrived: within a few per cent.
    assert rec["energy_per_output_token_j"] == pytest.approx(truth, rel=0.05)
    assert "estimated from the server's log lines" in r.stderr
    assert "counting tokens from" in r.stderr


def test_monitor_shows_joules_per_token_per_server(servers):
    env, epoch = fake_gpus({"devices": [h100(300), h100(300)]})
    s = servers("vllm", "--output-rate", "500", epoch_ns=epoch)
    p = subprocess.Popen([JOULES, "monitor", "--plain", "--interval", "200", "--tokens-from",
                          s.url, "--tokens-interval", str(INTERVAL_MS)], env=clean_env(env),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        found = None
        while time.monotonic() < deadline and found is None:
            line = p.stdout.readline()
            if not line:
                break
            if line.startswith("# tokens ") and "J/token" in line:
                found = line
        assert found, p.stderr.read() if p.poll() is not None else "no tokens line"
        assert found.startswith("# tokens vllm serving fake/model-7b on GPUs 0,1: ")
        j = float(found.split(": ")[1].split(" J/token")[0])
        assert j == pytest.approx(1.2, rel=0.05)
        assert "tok/s" in found and "(1 min)" in found
    finally:
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=20)
