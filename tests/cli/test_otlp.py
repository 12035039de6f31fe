"""`joules run --otlp URL`: OTLP/HTTP JSON pushes to a small collector run by the test, which
records every request and can be down, slow, or fail before it succeeds."""
import http.server
import json
import socket
import threading
import time

import pytest

from conftest import SANITIZED, joules, read_jsonl
from otlp_schema import parse_with_protobuf, validate

SLOW = 3.0 if SANITIZED else 1.0


class Collector:
    """An OTLP/HTTP receiver on 127.0.0.1: records (time, path, headers, body) per request."""

    def __init__(self, statuses=(), delay_s=0.0):
        self.requests = []
        self.statuses = list(statuses)  # answered in order, then 200
        self.delay_s = delay_s
        self.lock = threading.Lock()
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with owner.lock:
                    owner.requests.append((time.monotonic(), self.path, dict(self.headers), body))
                    status = owner.statuses.pop(0) if owner.statuses else 200
                if owner.delay_s:
                    time.sleep(owner.delay_s)
                reply = b"{}" if status == 200 else b'{"message":"try later"}'
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(reply)))
                    self.end_headers()
                    self.wfile.write(reply)
                except OSError:
                    pass  # the client gave up waiting: that is the point of a slow collector

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def payloads(self):
        with self.lock:
            return [json.loads(r[3]) for r in self.requests]


@pytest.fixture
def collector():
    made = []

    def make(**kw):
        c = Collector(**kw)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def run(tmp, *args, cmd=("sleep", "2")):
    out = tmp / "run.jsonl"
    t0 = time.monotonic()
    r = joules("run", "--backend", "sim", "--sim-gpus", "2", "--output", out, *args, "--", *cmd,
               timeout=120)
    wall = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    return r, read_jsonl(out)[-1], wall


def metrics_of(payload):
    [rm] = payload["resourceMetrics"]
    [sm] = rm["scopeMetrics"]
    return {m["name"]: m for m in sm["metrics"]}


def attrs(kvs):
    return {a["key"]: a["value"]["stringValue"] for a in kvs}


def value(point):
    return float(point["asInt"]) if "asInt" in point else point["asDouble"]


def test_payloads_carry_the_runs_metrics_names_values_and_attributes(tmp, collector):
    c = collector()
    r, end, _ = run(tmp, "--otlp", c.url, "--otlp-interval", "300", "--run-id", "otlp-1",
                    "--label", "team=infra", "--otlp-header", "Authorization=Bearer t0k")
    payloads = c.payloads()
    assert len(payloads) >= 4, len(payloads)  # ~6 at 300 ms in 2 s, plus the final one
    for (_, path, headers, body), p in zip(c.requests, payloads):
        assert path == "/v1/metrics"
        assert headers["Content-Type"] == "application/json"
        assert headers["Authorization"] == "Bearer t0k"
        validate(p)
        msg = parse_with_protobuf(body)  # and by protobuf itself, with opentelemetry-proto's classes
        metrics = msg.resource_metrics[0].scope_metrics[0].metrics
        assert {m.name for m in metrics} == set(metrics_of(p))
        resource = attrs(p["resourceMetrics"][0]["resource"]["attributes"])
        assert resource["service.name"] == "joules"
        assert resource["joules.run_id"] == "otlp-1"
        assert resource["team"] == "infra"
        assert resource["host.name"]

    # Energy grows from push to push; the last push carries the run's exact totals.
    energies = [value(metrics_of(p)["joules_run_energy_joules_total"]["sum"]["dataPoints"][0])
                for p in payloads if "joules_run_energy_joules_total" in metrics_of(p)]
    assert energies == sorted(energies) and len(energies) >= 3
    last = metrics_of(payloads[-1])
    energy = last["joules_run_energy_joules_total"]
    assert energy["unit"] == "J"
    assert energy["sum"]["isMonotonic"] is True
    assert energy["sum"]["aggregationTemporality"] == 2
    assert value(energy["sum"]["dataPoints"][0]) == pytest.approx(end["energy_j"], rel=1e-6)
    assert value(last["joules_run_finished"]["gauge"]["dataPoints"][0]) == 1
    per_gpu = {attrs(p["attributes"])["gpu"]: p
               for p in last["joules_run_gpu_energy_joules_total"]["sum"]["dataPoints"]}
    for d in end["devices"]:
        p = per_gpu[str(d["index"])]
        assert attrs(p["attributes"])["uuid"] == d["uuid"]
        assert attrs(p["attributes"])["model"] == d["name"]
        assert value(p) == pytest.approx(d["energy_j"], rel=1e-6)
    # Run-wide labels live on the resource, not on every point.
    assert "run_id" not in attrs(energy["sum"]["dataPoints"][0]["attributes"])
    mid = metrics_of(payloads[1])
    assert value(mid["joules_run_power_watts"]["gauge"]["dataPoints"][0]) > 0

    stats = end["exporters"]["otlp"]
    assert stats["batches"] == len(payloads) == stats["exported"]
    assert stats["failed"] == 0 and stats["dropped"] == 0 and stats["retries"] == 0
    assert "OTLP" not in r.stderr


def test_protobuf_rejects_what_joules_must_never_send():
    """The protobuf check has teeth: a field OTLP does not have, or a wrong type, is refused."""
    from google.protobuf.json_format import ParseError

    good = {"resourceMetrics": [{"scopeMetrics": [{"metrics": [
        {"name": "joules_up", "gauge": {"dataPoints": [
            {"timeUnixNano": "1700000000000000000", "asDouble": 1.0}]}}]}]}]}
    assert parse_with_protobuf(json.dumps(good)).resource_metrics[0].scope_metrics[0].metrics
    bad_field = json.loads(json.dumps(good))
    bad_field["resourceMetrics"][0]["scopeMetrics"][0]["metrics"][0]["unitt"] = "W"
    bad_type = json.loads(json.dumps(good))
    bad_type["resourceMetrics"][0]["scopeMetrics"][0]["metrics"][0]["gauge"]["dataPoints"][0][
        "timeUnixNano"] = "soon"
    for bad in (bad_field, bad_type):
        with pytest.raises(ParseError):
            parse_with_protobuf(json.dumps(bad))


def test_a_down_collector_costs_the_command_nothing(tmp):
    port = closed_port()
    r, end, wall = run(tmp, "--otlp", f"http://127.0.0.1:{port}/v1/metrics", "--otlp-interval",
                       "200", cmd=("sleep", "1"))
    assert end["duration_s"] < 1.0 + 0.3 * SLOW  # the command ran undisturbed
    assert wall < 1.0 + 2.0 + 1.5 * SLOW  # plus at most the 2 s given to the last push
    stats = end["exporters"]["otlp"]
    assert stats["exported"] == 0
    assert stats["batches"] >= 3
    assert stats["failed"] + stats["dropped"] == stats["batches"]
    assert "Connection refused" in stats["last_error"]
    assert f"joules: OTLP: {stats['batches']} of {stats['batches']} batches not delivered" in r.stderr


def test_a_slow_collector_never_delays_the_command(tmp, collector):
    c = collector(delay_s=4.0)  # answers long after joules' 1 s request timeout
    r, end, wall = run(tmp, "--otlp", c.url, "--otlp-interval", "200", cmd=("sleep", "2"))
    assert end["duration_s"] < 2.0 + 0.3 * SLOW
    assert wall < 2.0 + 2.0 + 1.5 * SLOW
    stats = end["exporters"]["otlp"]
    assert stats["exported"] == 0
    assert "timed out" in stats["last_error"]
    assert stats["requests"] >= 2 and stats["retries"] >= 1
    assert stats["failed"] + stats["dropped"] == stats["batches"]
    assert "batches not delivered" in r.stderr


def test_5xx_is_retried_with_backoff_until_it_succeeds(tmp, collector):
    c = collector(statuses=[503, 502])
    r, end, _ = run(tmp, "--otlp", c.url, "--otlp-interval", "300", cmd=("sleep", "3"))
    stats = end["exporters"]["otlp"]
    assert stats["failed"] == 0 and stats["dropped"] == 0
    assert stats["exported"] == stats["batches"]
    assert stats["retries"] == 2 and stats["requests"] == stats["batches"] + 2
    times = [t for t, *_ in c.requests]
    # The same batch again after 0.5 s, then after 1 s (exponential backoff).
    assert times[1] - times[0] >= 0.45
    assert times[2] - times[1] >= 0.95
    assert c.requests[0][3] == c.requests[1][3] == c.requests[2][3]
    assert "OTLP" not in r.stderr


@pytest.mark.parametrize("args,message", [
    (["--otlp", "https://collector:4318"], "https is not supported"),
    (["--otlp", "collector:4318"], "expected http://HOST"),
    (["--otlp", "http://127.0.0.1:4318", "--otlp-header", "no-equals"], "--otlp-header"),
    (["--otlp", "http://127.0.0.1:4318", "--otlp-header", "Content-Length=3"], "sets Content-Length"),
    (["--otlp", "http://127.0.0.1:4318", "--otlp-interval", "5"], "--otlp-interval '5'"),
    (["--otlp-interval", "1000"], "applies only with --otlp"),
    (["--otlp", "http://no-such-host.invalid:4318"], "cannot resolve"),
])
def test_bad_otlp_options_fail_before_the_command_starts(tmp, args, message):
    marker = tmp / "started"
    r = joules("run", "--backend", "sim", *args, "--", "touch", marker)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not marker.exists()
