"""End to end with a real Prometheus (Debian's `prometheus`): it scrapes two `joules serve`
instances posing as two nodes (different hostnames, labels and fake NVML scenarios), one
`joules run --prometheus` and one `joules wrap --prometheus` over the toy trainer, and its HTTP
API answers fleet queries (`sum by (hostname)`, `sum by (run_id)`, `rate(...)`) and step queries
that must match the scenarios' exact truth.  Prometheus asks for gzip, so the gzip encoding of
/metrics is what it stores.

Tolerances, stated once: a power reading of a constant draw is exact; a rate() or a live energy
rests on energy counters that advance every 20 ms here (as on recent GPUs, docs/nvml-notes.md
§2.2), and a scrape serves the sampler's latest snapshot, which may be one sampling interval old
(more when the machine is loaded).  So a value may be off by a counter update plus a sampling
interval of the draw at each end of its range, plus 1 %."""
import json
import pathlib
import shutil
import socket
import subprocess
import time
import types
import urllib.parse
import urllib.request

import pytest

from conftest import TRAINER, fake_gpus, truth_j, wait_for
from exporter_util import Process

PROMETHEUS = shutil.which("prometheus")
pytestmark = pytest.mark.skipif(PROMETHEUS is None,
                                reason="prometheus not installed (scripts/install-deps test)")

COUNTER = {"update_ms": 20, "phase_ms": 7}
NODE_INTERVAL_S = 0.05  # `joules serve --interval` of the two nodes
RUN_INTERVAL_S = 0.05


def rate_tolerance(watts, interval_s, span_s=4):
    """How far rate() over a span of `span_s` or more may be from a constant draw: at each end,
    a counter update and a snapshot up to one sampling interval old (twice that under load)."""
    return 2 * watts * (0.020 + 2 * interval_s) / span_s + 0.01 * watts


def h100(watts):
    return {"name": "NVIDIA H100 80GB HBM3", "architecture": "hopper", "latency_us": 20,
            "power": {"type": "constant", "watts": watts}, "energy_counter": COUNTER}


NODE_A = {"devices": [h100(300), h100(200)]}  # 500 W
NODE_B = {"devices": [{**h100(450), "name": "NVIDIA H200"}]}  # 450 W
RUN = {"devices": [h100(250), h100(350)]}  # 600 W
RUN_ID = "e2e-run-1"
WRAP = {"devices": [h100(300), h100(400)]}  # 700 W
WRAP_ID = "e2e-wrap-1"
WRAP_STEPS = 70


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Prometheus:
    def __init__(self, tmp, targets):
        self.port = free_port()
        config = tmp / "prometheus.yml"
        # Generated config: one job for the node exporters, one for the run.
        config.write_text(json.dumps({
            "global": {"scrape_interval": "1s", "scrape_timeout": "900ms",
                       "evaluation_interval": "1s"},
            "scrape_configs": [
                {"job_name": "joules-nodes", "static_configs": [{"targets": targets[:2]}]},
                {"job_name": "joules-runs", "static_configs": [{"targets": targets[2:]}]},
            ]}))  # JSON is YAML
        self.log = open(tmp / "prometheus.log", "w")
        self.proc = subprocess.Popen(
            [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT)
        assert wait_for(self.ready, timeout=30), (tmp / "prometheus.log").read_text()

    def ready(self):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=1) as r:
                return r.status == 200
        except OSError:
            return False

    def query(self, expr, at=None):
        params = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.load(r)
        assert body["status"] == "success", body
        return [(s["metric"], float(s["value"][1])) for s in body["data"]["result"]]

    def query_raw(self, expr):
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode(
            {"query": expr})
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.load(r)
        assert body["status"] == "success", body
        return body["data"]["result"]

    def by(self, label, expr, at=None):
        return {m.get(label): v for m, v in self.query(expr, at)}

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()


@pytest.fixture
def fleet(tmp):
    procs = []
    prom = None
    try:
        env_a, epoch_a = fake_gpus(NODE_A)
        env_b, epoch_b = fake_gpus(NODE_B)
        env_r, epoch_r = fake_gpus(RUN)
        env_w, epoch_w = fake_gpus(WRAP)
        a = Process("serve", "--listen", "127.0.0.1:0", "--hostname", "node-a", "--label",
                    "cluster=east", "--interval", str(int(NODE_INTERVAL_S * 1000)), env=env_a)
        procs.append(a)
        b = Process("serve", "--listen", "127.0.0.1:0", "--hostname", "node-b", "--label",
                    "cluster=west", "--interval", str(int(NODE_INTERVAL_S * 1000)), env=env_b)
        procs.append(b)
        out = tmp / "run.jsonl"
        r = Process("run", "--prometheus", "127.0.0.1:0", "--run-id", RUN_ID, "--label",
                    "cluster=east", "--interval", str(int(RUN_INTERVAL_S * 1000)), "--output", out, "--", "sleep", "14",
                    env=env_r)
        procs.append(r)
        # Steps of 150 ms +-40 % (the toy trainer's jitter), each line's instant in `stamps`.
        stamps = tmp / "stamps.txt"
        w = Process("wrap", "--prometheus", "127.0.0.1:0", "--run-id", WRAP_ID, "--interval",
                    "50", "--output", tmp / "wrap.jsonl", "--", TRAINER, "--steps", WRAP_STEPS,
                    "--step-ms", "150", "--setup-ms", "300", "--stamps", stamps, env=env_w)
        procs.append(w)
        prom = Prometheus(tmp, [a.address, b.address, r.address, w.address])
        yield types.SimpleNamespace(prom=prom, out=out, epoch=epoch_r, wrap=w, stamps=stamps,
                                    wrap_epoch=epoch_w, wrap_out=tmp / "wrap.jsonl")
    finally:
        if prom:
            prom.stop()
        for p in procs:
            p.kill()


def test_prometheus_scrapes_two_nodes_and_a_run_and_its_queries_match_the_truth(fleet):
    prom, out, epoch = fleet.prom, fleet.out, fleet.epoch
    t0 = time.time()
    assert wait_for(lambda: len([v for _, v in prom.query("up == 1")]) == 4, timeout=20)
    # rate() over 5 s needs a few scrapes in its range.
    def enough():
        found = _range(prom, "joules_gpu_energy_joules_total[6s]")
        return len(found) == 3 and all(len(s["values"]) >= 6 for s in found)

    assert wait_for(enough, timeout=25, step=0.2)
    assert time.time() - t0 < 30

    # Node power: a gauge of constant draws, exact.
    assert prom.by("hostname", "sum by (hostname) (joules_gpu_power_watts)") == {
        "node-a": 500.0, "node-b": 450.0}
    assert prom.by("cluster", "sum by (cluster) (joules_gpu_power_watts)") == {
        "east": 500.0, "west": 450.0}
    assert prom.by("job", "count by (job) (joules_up == 1)") == {"joules-nodes": 2.0,
                                                                "joules-runs": 2.0}
    assert prom.by("hostname", "max by (hostname) (joules_up)") == {"node-a": 1.0,
                                                                   "node-b": 1.0,
                                                                   _run_host(out): 1.0}

    # Node energy: rate of the energy counters = the draw.
    rates = prom.by("hostname", "sum by (hostname) (rate(joules_gpu_energy_joules_total[5s]))")
    for host, watts in (("node-a", 500.0), ("node-b", 450.0)):
        assert rates[host] == pytest.approx(watts, abs=rate_tolerance(watts, NODE_INTERVAL_S)), (
            host, rates)
    per_gpu = {(m["hostname"], m["gpu"]): v for m, v in
               prom.query("rate(joules_gpu_energy_joules_total[5s])")}
    for gpu, watts in (("0", 300.0), ("1", 200.0)):
        assert per_gpu[("node-a", gpu)] == pytest.approx(
            watts, abs=rate_tolerance(watts, NODE_INTERVAL_S)), per_gpu

    # The run: energy so far, summed by run id, against the truth over the same span.
    at = time.time()
    energy = prom.by("run_id", "sum by (run_id) (joules_run_energy_joules_total)", at)
    duration = prom.by("run_id", "max by (run_id) (joules_run_duration_seconds)", at)
    assert set(energy) == {RUN_ID, WRAP_ID}  # the node exporters carry no run_id
    start = json.loads(pathlib.Path(out).read_text().splitlines()[0])
    assert duration[RUN_ID] > 4
    truth = sum(truth_j(RUN, i, epoch, start["start_monotonic_s"],
                        start["start_monotonic_s"] + duration[RUN_ID]) for i in range(2))
    tolerance = 2 * 600 * 0.020 + 0.01 * truth
    assert energy[RUN_ID] == pytest.approx(truth, abs=tolerance), (energy, truth)
    run_rate = prom.by("run_id", "sum by (run_id) (rate(joules_run_energy_joules_total[5s]))",
                       at)
    print(f"node rates {rates}; run energy {energy[RUN_ID]:.2f} J vs truth {truth:.2f} J over "
          f"{duration[RUN_ID]:.3f} s; run rate {run_rate[RUN_ID]:.2f} W")
    assert run_rate[RUN_ID] == pytest.approx(600, abs=rate_tolerance(600, RUN_INTERVAL_S))
    # One query over the fleet: the east cluster's GPUs draw the node's 500 W and the run's 600 W.
    east = prom.by("cluster", "sum by (cluster) (joules_gpu_power_watts) + on (cluster) "
                              "sum by (cluster) (joules_run_power_watts{cluster!=\"\"})")
    assert east == {"east": 1100.0}


def _range(prom, expr):
    url = f"http://127.0.0.1:{prom.port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)["data"]["result"]


def _run_host(out):
    return json.loads(pathlib.Path(out).read_text().splitlines()[0])["hostname"]


def test_every_dashboard_query_is_valid_promql_with_data(fleet):
    prom = fleet.prom
    assert wait_for(lambda: len(prom.query("up == 1")) == 4, timeout=20)
    dashboard = json.loads((pathlib.Path(__file__).parents[2] / "dashboards" /
                            "joules.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    for expr in exprs:
        promql = (expr.replace("$hostname", ".*").replace("$run_id", ".*")
                  .replace("$__range", "1m"))
        prom.query(promql)  # asserts status success: Prometheus parsed and ran it
    # Node and run panels have data from the fleet.
    assert prom.query('sum by (hostname) (joules_gpu_power_watts{hostname=~".*"})')
    assert prom.query('sum by (run_id) (joules_run_energy_joules_total{run_id=~".*"})')


def test_wrap_step_metrics_in_prometheus_match_the_trainers_steps(fleet):
    """Every scrape of the wrapped run, as Prometheus stored it: the step windows counted so far
    are the trainer's step lines printed by then, less the first (the window up to step 1's line
    is `setup`); the last step is the last line's number; and the last step's energy is what the
    fake GPUs drew between that line and the one before it (steps last 90-210 ms)."""
    prom, w = fleet.prom, fleet.wrap
    wall_minus_mono = time.time() - time.monotonic()  # the trainer stamps CLOCK_MONOTONIC
    assert wait_for(lambda: w.proc.poll() is not None, timeout=60, step=0.2), "wrap did not end"
    assert w.proc.returncode == 0, w.stop()[2]
    stamps = [int(x) / 1e9 for x in fleet.stamps.read_text().split()]
    assert len(stamps) == WRAP_STEPS
    sel = f'{{run_id="{WRAP_ID}"}}'

    def samples(name):  # {scrape timestamp: value}, every raw sample of the last 2 minutes
        found = prom.query_raw(f"{name}{sel}[2m]")
        assert len(found) == 1, (name, found)
        return {float(t): float(v) for t, v in found[0]["values"]}

    def lines_by(t):  # step lines the trainer had printed by wall-clock time t
        return sum(1 for s in stamps if s + wall_minus_mono <= t)

    steps, last = samples("joules_run_steps_total"), samples("joules_run_last_step")
    energy = samples("joules_run_last_step_energy_joules")
    assert len(energy) >= 5, energy  # Prometheus scraped the run while it stepped
    checked = 0
    for t, e in sorted(energy.items()):
        n = int(last[t])
        assert steps[t] == n - 1, (t, steps[t], n)
        # Prometheus stamps a sample when its scrape starts; joules renders a moment later, and
        # a line reaches joules a moment after its stamp.  Steps are 90 ms apart or more.
        assert lines_by(t - 0.03) <= n <= lines_by(t + 0.06), (t, n)
        truth = sum(truth_j(WRAP, i, fleet.wrap_epoch, stamps[n - 2], stamps[n - 1])
                    for i in range(2))
        # The line's arrival at joules trails the trainer's stamp by the pty's latency and, on a
        # loaded test machine, a scheduler wake-up, at both ends of the step: 10 ms of the
        # 700 W draw (the timing tests run four at a time on two cores, where 8 ms was seen),
        # plus 1 %.  The per-step accuracy itself is bounded in test_wrap_accuracy.py.
        assert e == pytest.approx(truth, abs=700 * 0.010 + 0.01 * truth), (n, e, truth)
        checked += 1
    assert checked >= 5
    # And the same through PromQL: energy per step over the steps scraped.
    t_last = max(energy)
    n_last = int(last[t_last])
    per_step = prom.query(f"max_over_time(joules_run_step_energy_joules_total{sel}[2m]) / "
                          f"max_over_time(joules_run_steps_total{sel}[2m])")
    mean_truth = sum(truth_j(WRAP, i, fleet.wrap_epoch, stamps[0], stamps[n_last - 1])
                     for i in range(2)) / (n_last - 1)
    assert per_step[0][1] == pytest.approx(mean_truth, rel=0.01), (per_step, mean_truth)
