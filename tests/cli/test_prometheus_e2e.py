"""End to end with a real Prometheus (Debian's `prometheus`): it scrapes two `joules serve`
instances posing as two nodes (different hostnames, labels and fake NVML scenarios) and one
`joules run --prometheus`, and its HTTP API answers fleet queries (`sum by (hostname)`,
`sum by (run_id)`, `rate(...)`) that must match the scenarios' exact truth.

Tolerances, stated once: a power reading of a constant draw is exact; a rate() or a live energy
rests on energy counters that advance every 20 ms here (as on recent GPUs, nvml.md §4.1), so it
may be off by about one counter update of the draw (20 ms x power) at each end of its range,
plus 1 %."""
import json
import pathlib
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

from conftest import fake_gpus, truth_j, wait_for
from exporter_util import Process

PROMETHEUS = shutil.which("prometheus")
pytestmark = pytest.mark.skipif(PROMETHEUS is None,
                                reason="prometheus not installed (scripts/install-deps test)")

COUNTER = {"update_ms": 20, "phase_ms": 7}


def h100(watts):
    return {"name": "NVIDIA H100 80GB HBM3", "architecture": "hopper", "latency_us": 20,
            "power": {"type": "constant", "watts": watts}, "energy_counter": COUNTER}


NODE_A = {"devices": [h100(300), h100(200)]}  # 500 W
NODE_B = {"devices": [{**h100(450), "name": "NVIDIA H200"}]}  # 450 W
RUN = {"devices": [h100(250), h100(350)]}  # 600 W
RUN_ID = "e2e-run-1"


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
        a = Process("serve", "--listen", "127.0.0.1:0", "--hostname", "node-a", "--label",
                    "cluster=east", "--interval", "200", env=env_a)
        procs.append(a)
        b = Process("serve", "--listen", "127.0.0.1:0", "--hostname", "node-b", "--label",
                    "cluster=west", "--interval", "200", env=env_b)
        procs.append(b)
        out = tmp / "run.jsonl"
        r = Process("run", "--prometheus", "127.0.0.1:0", "--run-id", RUN_ID, "--label",
                    "cluster=east", "--interval", "100", "--output", out, "--", "sleep", "14",
                    env=env_r)
        procs.append(r)
        prom = Prometheus(tmp, [a.address, b.address, r.address])
        yield prom, out, epoch_r
    finally:
        if prom:
            prom.stop()
        for p in procs:
            p.kill()


def test_prometheus_scrapes_two_nodes_and_a_run_and_its_queries_match_the_truth(fleet):
    prom, out, epoch = fleet
    t0 = time.time()
    assert wait_for(lambda: len([v for _, v in prom.query("up == 1")]) == 3, timeout=20)
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
    assert prom.by("hostname", "sum by (hostname) (joules_up)") == {"node-a": 1.0,
                                                                   "node-b": 1.0,
                                                                   _run_host(out): 1.0}

    # Node energy: rate of the energy counters = the draw.
    rates = prom.by("hostname", "sum by (hostname) (rate(joules_gpu_energy_joules_total[5s]))")
    for host, watts in (("node-a", 500.0), ("node-b", 450.0)):
        tolerance = 2 * watts * 0.020 / 4 + 0.01 * watts  # 4 s or more between the range's ends
        assert rates[host] == pytest.approx(watts, abs=tolerance), (host, rates)
    per_gpu = {(m["hostname"], m["gpu"]): v for m, v in
               prom.query("rate(joules_gpu_energy_joules_total[5s])")}
    assert per_gpu[("node-a", "0")] == pytest.approx(300, rel=0.03)
    assert per_gpu[("node-a", "1")] == pytest.approx(200, rel=0.03)

    # The run: energy so far, summed by run id, against the truth over the same span.
    at = time.time()
    energy = prom.by("run_id", "sum by (run_id) (joules_run_energy_joules_total)", at)
    duration = prom.by("run_id", "max by (run_id) (joules_run_duration_seconds)", at)
    assert set(energy) == {RUN_ID}  # the node exporters carry no run_id
    start = json.loads(pathlib.Path(out).read_text().splitlines()[0])
    assert duration[RUN_ID] > 4
    truth = sum(truth_j(RUN, i, epoch, start["start_monotonic_s"],
                        start["start_monotonic_s"] + duration[RUN_ID]) for i in range(2))
    tolerance = 2 * 600 * 0.020 + 0.01 * truth
    assert energy[RUN_ID] == pytest.approx(truth, abs=tolerance), (energy, truth)
    run_rate = prom.by("run_id", "sum by (run_id) (rate(joules_run_energy_joules_total[5s]))")
    print(f"node rates {rates}; run energy {energy[RUN_ID]:.2f} J vs truth {truth:.2f} J over "
          f"{duration[RUN_ID]:.3f} s; run rate {run_rate[RUN_ID]:.2f} W")
    assert run_rate[RUN_ID] == pytest.approx(600, abs=2 * 600 * 0.020 / 4 + 6)
    # One query over the fleet: the east cluster's GPUs draw the node's 500 W and the run's 600 W.
    east = prom.by("cluster", "sum by (cluster) (joules_gpu_power_watts) + on (cluster) "
                              "sum by (cluster) (joules_run_power_watts)")
    assert east == {"east": 1100.0}


def _range(prom, expr):
    url = f"http://127.0.0.1:{prom.port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)["data"]["result"]


def _run_host(out):
    return json.loads(pathlib.Path(out).read_text().splitlines()[0])["hostname"]


def test_every_dashboard_query_is_valid_promql_with_data(fleet):
    prom, _, _ = fleet
    assert wait_for(lambda: len(prom.query("up == 1")) == 3, timeout=20)
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
