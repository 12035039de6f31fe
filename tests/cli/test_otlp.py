"""`joules run --otlp URL`: OTLP/HTTP JSON pushes to small collectors run by the test
(otlp_servers.py), over HTTP and HTTPS, directly or through a proxy; collectors that are down,
slow, throttle, or refuse."""
import os
import shutil
import socket
import time

import pytest

from conftest import FAKE_NVML_DIR, SANITIZED, joules, read_jsonl
from otlp_schema import parse_with_protobuf, validate
from otlp_servers import Collector, Pki, Proxy

SLOW = 3.0 if SANITIZED else 1.0

# Hermetic: no proxy of the machine running the tests; the proxy tests set their own.
for _name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY",
              "no_proxy", "NO_PROXY"):
    os.environ.pop(_name, None)


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


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return Pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
def proxy():
    p = Proxy()
    yield p
    p.close()


def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def run(tmp, *args, cmd=("sleep", "2"), env=None):
    out = tmp / "run.jsonl"
    t0 = time.monotonic()
    r = joules("run", "--backend", "sim", "--sim-gpus", "2", "--output", out, *args, "--", *cmd,
               timeout=120, env=env)
    r.wall_s = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    end = read_jsonl(out)[-1]
    return r, end, end["exporters"]["otlp"]


def metrics_of(payload):
    [rm] = payload["resourceMetrics"]
    [sm] = rm["scopeMetrics"]
    return {m["name"]: m for m in sm["metrics"]}


def attrs(kvs):
    return {a["key"]: a["value"]["stringValue"] for a in kvs}


def value(point):
    return float(point["asInt"]) if "asInt" in point else point["asDouble"]


def assert_all_delivered(c, stats):
    assert stats["batches"] == len(c.requests) == stats["exported"], stats
    assert stats["failed"] == 0 and stats["dropped"] == 0 and stats["retries"] == 0, stats
    for p in c.payloads():
        validate(p)


def test_payloads_carry_the_runs_metrics_names_values_and_attributes(tmp, collector):
    c = collector()
    r, end, stats = run(tmp, "--otlp", c.url, "--otlp-interval", "300", "--run-id", "otlp-1",
                        "--label", "team=infra", "--otlp-header", "Authorization=Bearer t0k")
    payloads = c.payloads()
    assert len(payloads) >= 4, len(payloads)  # ~6 at 300 ms in 2 s, plus the final one
    for req, p in zip(c.requests, payloads):
        assert req.path == "/v1/metrics"
        assert req.headers["Content-Type"] == "application/json"
        assert req.headers["Content-Encoding"] == "gzip"
        assert req.headers["Authorization"] == "Bearer t0k"
        assert req.headers["User-Agent"].startswith("joules/")
        validate(p)
        msg = parse_with_protobuf(req.body)  # and by protobuf, with opentelemetry-proto's classes
        metrics = msg.resource_metrics[0].scope_metrics[0].metrics
        assert {m.name for m in metrics} == set(metrics_of(p))
        resource = attrs(p["resourceMetrics"][0]["resource"]["attributes"])
        assert resource["service.name"] == "joules"
        assert resource["joules.run_id"] == "otlp-1"
        assert resource["team"] == "infra"
        assert resource["host.name"]
    # One connection, kept alive from push to push.
    assert len({req.client_port for req in c.requests}) == 1

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

    assert_all_delivered(c, stats)
    assert stats["url"] == c.url + "/v1/metrics"
    assert "OTLP" not in r.stderr


def test_protobuf_rejects_what_joules_must_never_send():
    """The protobuf check has teeth: a field OTLP does not have, or a wrong type, is refused."""
    import json

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


def test_a_down_collector_costs_the_command_nothing_and_no_secret_is_printed(tmp):
    url = f"http://127.0.0.1:{closed_port()}/v1/metrics?api-key=k3y-in-query"
    r, end, stats = run(tmp, "--otlp", url, "--otlp-interval", "200",
                        "--otlp-header", "Authorization=Bearer s3cret-t0ken", cmd=("sleep", "1"))
    assert end["duration_s"] < 1.0 + 0.3 * SLOW  # the command ran undisturbed
    assert r.wall_s < 1.0 + 2.0 + 1.5 * SLOW  # plus at most the 2 s given to the last push
    assert stats["exported"] == 0
    assert stats["batches"] >= 3
    assert stats["failed"] + stats["dropped"] == stats["batches"]
    assert stats["retries"] >= 1  # a refused connection is worth another try
    assert "Couldn't connect" in stats["last_error"] or "refused" in stats["last_error"]
    assert stats["url"] == url.split("?")[0]
    assert (f"joules: OTLP: {stats['batches']} of {stats['batches']} batches not delivered to "
            f"{url.split('?')[0]}") in r.stderr
    everything = r.stderr + (tmp / "run.jsonl").read_text()
    assert "s3cret" not in everything and "k3y" not in everything


def test_a_slow_collector_never_delays_the_command_nor_joules_exit(tmp, collector):
    c = collector(hold=True)  # answers only after the test: long past joules' 1 s timeout
    r, end, stats = run(tmp, "--otlp", c.url, "--otlp-interval", "200", cmd=("sleep", "1"))
    assert end["duration_s"] < 1.0 + 0.3 * SLOW
    # The end waits for the collector at most 2 s, however long its requests would take.
    assert r.wall_s < 1.0 + 2.0 + 1.5 * SLOW
    assert stats["exported"] == 0
    assert "timed out" in stats["last_error"]
    assert stats["requests"] >= 2 and stats["retries"] >= 1
    assert stats["failed"] + stats["dropped"] == stats["batches"]
    assert "batches not delivered" in r.stderr


def test_retryable_statuses_are_retried_with_exponential_backoff(tmp, collector):
    c = collector(statuses=[502, 504])
    r, _, stats = run(tmp, "--otlp", c.url, "--otlp-interval", "300", cmd=("sleep", "1.5"))
    assert stats["failed"] == 0 and stats["dropped"] == 0
    assert stats["exported"] == stats["batches"]
    assert stats["retries"] == 2 and stats["requests"] == stats["batches"] + 2
    t = [req.time for req in c.requests]
    # The same batch again after 0.25-0.5 s, then after 0.5-1 s (jittered doubling backoff).
    assert t[1] - t[0] >= 0.24
    assert t[2] - t[1] >= 0.49
    assert c.requests[0].body == c.requests[1].body == c.requests[2].body
    assert "OTLP" not in r.stderr


def test_retry_after_is_honoured(tmp, collector):
    c = collector(statuses=[(503, {"Retry-After": "0"}, None), (429, {"Retry-After": "2"}, None)])
    r, _, stats = run(tmp, "--otlp", c.url, "--otlp-interval", "300", cmd=("sleep", "1.5"))
    assert stats["failed"] == 0 and stats["dropped"] == 0
    assert stats["exported"] == stats["batches"] and stats["retries"] == 2
    t = [req.time for req in c.requests]
    # 2 s as asked, where the backoff would have waited at most 1 s.
    assert t[2] - t[1] >= 1.95
    assert c.requests[0].body == c.requests[2].body
    assert "OTLP" not in r.stderr


def test_refusals_are_not_retried_and_the_collectors_words_are_escaped(tmp, collector):
    hostile = b'{"message":"bad \x1b[31mred\x1b[0m ' + b"x" * 500 + b'"}'
    c = collector(statuses=[(400, {}, hostile), 500])
    r, _, stats = run(tmp, "--otlp", c.url, "--otlp-interval", "200", cmd=("sleep", "0.7"))
    assert stats["failed"] == 2 and stats["retries"] == 0
    assert stats["requests"] == stats["batches"] == stats["exported"] + 2
    assert c.requests[0].body != c.requests[1].body  # two batches, one request each
    assert "HTTP 400" not in stats["last_error"] and stats["last_error"].startswith("HTTP 500")
    assert "2 of" in r.stderr and "batches not delivered" in r.stderr
    c2 = collector(statuses=[(400, {}, hostile)])
    r, _, stats = run(tmp, "--otlp", c2.url, "--otlp-interval", "5000", cmd=("true",))
    assert stats["last_error"].startswith('HTTP 400: {"message":"bad \\x1b[31mred')
    assert stats["last_error"].endswith("xxx...") and len(stats["last_error"]) < 300
    [line] = [x for x in r.stderr.splitlines() if "OTLP" in x]
    assert "\\x1b[31m" in line and "\x1b" not in r.stderr


def test_https_with_a_private_ca_and_a_client_certificate(tmp, collector, pki):
    c = collector(tls=pki, client_ca=True)
    r, end, stats = run(tmp, "--otlp", c.url, "--otlp-ca-file", pki.ca, "--otlp-client-cert",
                        pki.client_cert, "--otlp-client-key", pki.client_key,
                        "--otlp-interval", "200", cmd=("sleep", "0.6"))
    assert_all_delivered(c, stats)
    assert len(c.requests) >= 3
    assert {req.client_cn for req in c.requests} == {"joules-client"}
    assert len({req.client_port for req in c.requests}) == 1  # one TLS handshake for all
    assert value(metrics_of(c.payloads()[-1])["joules_run_energy_joules_total"]["sum"][
        "dataPoints"][0]) == pytest.approx(end["energy_j"], rel=1e-6)
    assert stats["url"] == c.url + "/v1/metrics"


def test_https_to_an_untrusted_certificate_is_refused_and_counted(tmp, collector, pki):
    c = collector(tls=pki)
    r, end, stats = run(tmp, "--otlp", c.url, "--otlp-interval", "200",
                        cmd=("sleep", str(0.6 * SLOW)))
    assert c.requests == [] and c.handshake_errors
    assert stats["exported"] == 0 and stats["batches"] >= 3
    # Trying again cannot make the certificate trusted: one request per batch.
    assert stats["failed"] == stats["requests"] == stats["batches"] and stats["retries"] == 0
    assert "certificate" in stats["last_error"]
    assert f"{stats['batches']} of {stats['batches']} batches not delivered to {c.url}" in r.stderr


@pytest.mark.parametrize("scheme,variables,proxied", [
    ("https", {"HTTPS_PROXY": "{proxy}"}, True),
    ("http", {"http_proxy": "{proxy}"}, True),
    ("https", {"https_proxy": "{proxy}", "NO_PROXY": "127.0.0.1"}, False),
])
def test_proxies_come_from_the_environment(tmp, collector, pki, proxy, scheme, variables,
                                           proxied):
    c = collector(tls=pki if scheme == "https" else None)
    env = {k: v.format(proxy=proxy.url) for k, v in variables.items()}
    tls = ["--otlp-ca-file", pki.ca] if scheme == "https" else []
    _, _, stats = run(tmp, "--otlp", c.url, *tls, "--otlp-interval", "200", cmd=("sleep", "0.5"),
                      env=env)
    assert_all_delivered(c, stats)
    if not proxied:
        assert proxy.lines == []
    elif scheme == "https":
        assert proxy.lines == [f"CONNECT 127.0.0.1:{c.port} HTTP/1.1"]
    else:
        assert proxy.lines == [f"POST {c.url}/v1/metrics HTTP/1.1"]


@pytest.mark.parametrize("args,message", [
    (["--otlp", "ftp://collector:4318"], "expected http[s]://HOST"),
    (["--otlp", "collector:4318"], "expected http[s]://HOST"),
    (["--otlp", "https://user:pw@collector"], "credentials belong in --otlp-header"),
    (["--otlp", "http://127.0.0.1:4318", "--otlp-header", "no-equals"], "--otlp-header"),
    (["--otlp", "http://127.0.0.1:4318", "--otlp-header", "Content-Length=3"],
     "sets Content-Length"),
    (["--otlp", "http://127.0.0.1:4318", "--otlp-header", "Content-Encoding=br"],
     "sets Content-Encoding"),
    (["--otlp", "http://127.0.0.1:4318", "--otlp-interval", "5"], "--otlp-interval '5'"),
    (["--otlp-interval", "1000"], "applies only with --otlp"),
    (["--otlp-ca-file", "{ca}"], "applies only with --otlp"),
    (["--otlp", "http://no-such-host.invalid:4318"], "cannot resolve"),
    (["--otlp", "https://127.0.0.1", "--otlp-ca-file", "{tmp}/none.pem"],
     "--otlp-ca-file '{tmp}/none.pem': No such file or directory; expected a readable PEM file"),
    (["--otlp", "https://127.0.0.1", "--otlp-ca-file", "{tmp}"], "Is a directory"),
    (["--otlp", "https://127.0.0.1", "--otlp-ca-file", "{key}"], "no CERTIFICATE in it"),
    (["--otlp", "https://127.0.0.1", "--otlp-ca-file", "{tmp}/run.jsonl"], "no PEM block"),
    (["--otlp", "http://127.0.0.1", "--otlp-ca-file", "{ca}"], "only to an https://"),
    (["--otlp", "https://127.0.0.1", "--otlp-client-cert", "{ca}"], "go together"),
    (["--otlp", "https://127.0.0.1", "--otlp-client-cert", "{ca}", "--otlp-client-key", "{ca}"],
     "--otlp-client-key '{ca}': no PRIVATE KEY in it"),
])
def test_bad_otlp_options_fail_before_the_command_starts(tmp, pki, args, message):
    marker = tmp / "started"
    out = tmp / "run.jsonl"
    out.write_text("kept\n")
    names = {"tmp": tmp, "ca": pki.ca, "key": pki.client_key}
    r = joules("run", "--backend", "sim", "--output", out,
               *[a.format(**names) for a in args], "--", "touch", marker)
    assert r.returncode == 2, r.stderr
    assert message.format(**names) in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not marker.exists()
    assert out.read_text() == "kept\n"  # not truncated


def test_without_libcurl_otlp_stops_before_the_command_and_says_what_to_install(tmp):
    # libcurl is opened at run time (src/http/curl_library.hpp): here both names it is looked
    # for are a library that is not libcurl (the fake NVML), found first on LD_LIBRARY_PATH.
    libs = tmp / "not-curl"
    libs.mkdir()
    for name in ("libcurl.so.4", "libcurl-gnutls.so.4"):
        shutil.copy(FAKE_NVML_DIR / "full" / "libnvidia-ml.so.1", libs / name)
    marker = tmp / "started"
    r = joules("run", "--backend", "sim", "--otlp", f"http://127.0.0.1:{closed_port()}/v1/metrics",
               "--", "touch", marker, env={"LD_LIBRARY_PATH": str(libs)})
    assert r.returncode != 0, r.stderr
    assert "OTLP: cannot load libcurl" in r.stderr
    assert "libcurl.so.4 lacks curl_global_init" in r.stderr
    assert "install libcurl4" in r.stderr
    assert not marker.exists()
