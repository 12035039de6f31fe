"""dashboards/joules.json queries only metrics that joules really exposes: every name in its
PromQL (panels and variables) must appear in real /metrics output of `joules serve` (fake NVML
with health, RAPL from a powercap fixture, --dcgm-compat, a region and a price, the tokens of a
fake vLLM server, tests/cli/fake_inference.py, a web configuration file) or of
`joules wrap --prometheus` (the toy trainer printing step lines, a region and a price), and
every label a panel selects on must be on that metric there, with the value it asks for."""
import json
import os
import re
import signal
import subprocess
import sys

from conftest import ROOT, TRAINER, fake_gpus, wait_for
from exporter_util import Process, parse

DASHBOARD = ROOT / "dashboards" / "joules.json"
METRIC = re.compile(r"\b((?:joules|DCGM)_[A-Za-z0-9_]+)\b")
# name{label="value", label=~"regex", label!="value"}: the matchers of one selector.
SELECTOR = re.compile(r"\b((?:joules|DCGM)_[A-Za-z0-9_]+)\{([^}]*)\}")
MATCHER = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)"')


def queried():
    d = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in d["panels"] for t in p.get("targets", [])]
    exprs += [v["definition"] for v in d["templating"]["list"] if "definition" in v]
    assert len(exprs) > 20
    return {m for e in exprs for m in METRIC.findall(e)}, exprs


def test_the_dashboard_is_valid_grafana_json_with_unique_ids():
    d = json.loads(DASHBOARD.read_text())
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids))
    for p in d["panels"]:
        assert {"h", "w", "x", "y"} <= set(p["gridPos"]), p["title"]
        for t in p.get("targets", []):
            assert t["datasource"]["uid"] == "${datasource}"
    titles = " ".join(p["title"] for p in d["panels"]).lower()
    for topic in ("node power", "energy per run", "energy per step", "straggler", "throttl",
                  "joules up", "co2e", "cost", "components", "j/output token"):
        assert topic in titles, topic


def real_output(tmp):
    """{name: [labels dict]} of every series in a scrape of serve and of a wrapped training."""
    seen = {}

    def add(text):
        for (name, labels), _ in parse(text).items():
            seen.setdefault(name, []).append(dict(labels))

    health = {"gpu_util_percent": 50, "clocks_event_reasons": 4, "tensor_util_percent": 20.0,
              "ecc_uncorrected": 1, "remapped_rows_corrected": 1}
    env, _ = fake_gpus({"devices": [{"architecture": "hopper", "health": health,
                                     "power": {"type": "constant", "watts": 300}}]})
    env["JOULES_POWERCAP_ROOT"] = str(ROOT / "tests" / "fixtures" / "powercap" / "intel-2s-dram")
    server = subprocess.Popen([sys.executable, str(ROOT / "tests" / "cli" / "fake_inference.py"),
                               "--format", "vllm"], stdout=subprocess.PIPE, text=True,
                              start_new_session=True)
    node = None
    try:
        port = int(server.stdout.readline().split()[-1])
        # A web configuration that only adds a header: scrapes stay plain, and serve exposes
        # whether the file's last reading was good.
        web = tmp / "web.yml"
        web.write_text("http_server_config:\n  headers:\n    X-Frame-Options: deny\n")
        node = Process("serve", "--listen", "127.0.0.1:0", "--dcgm-compat", "--region", "DE",
                       "--price-per-kwh", "0.3", "--currency", "EUR", "--tokens-from",
                       f"http://127.0.0.1:{port}/metrics", "--tokens-interval", "200",
                       "--web-config-file", web, env=env)
        # GPM ratios need two readings, energy one tick, J/token two scrapes: wait for them (under
        # ThreadSanitizer beside the fuzzers that took over 10 s once).
        wanted = {"joules_gpu_utilization_ratio", "joules_gpu_tensor_active_ratio",
                  "joules_gpu_energy_joules_total", "joules_inference_idle_energy_ratio"}
        assert wait_for(lambda: wanted <= {n for n, _ in parse(node.scrape())}, timeout=30,
                        step=0.1), wanted - {n for n, _ in parse(node.scrape())}
        add(node.scrape())
    finally:
        if node:
            node.kill()
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()

    # Two GPUs, one drawing more: the per-GPU deviation is there and not zero.
    env, _ = fake_gpus({"devices": [{"architecture": "hopper",
                                     "power": {"type": "constant", "watts": w}}
                                    for w in (300, 400)]})
    run = Process("wrap", "--prometheus", "0", "--run-id", "dash-1", "--region", "FR",
                  "--price-per-kwh", "0.2", "--", TRAINER, "--steps", "400", "--step-ms", "30",
                  "--setup-ms", "50", "--eval-every", "10", "--eval-ms", "30", env=env)
    try:
        # Steps, evaluation and a prediction are in once val_loss and the prediction show.
        def ready():
            text = run.scrape()
            return ("joules_run_predicted_energy_joules" in text and 'metric="val_loss"' in text
                    and "joules_run_gpu_step_energy_deviation_ratio" in text)

        assert wait_for(ready, timeout=30, step=0.2)
        add(run.scrape())
    finally:
        run.kill()
    return seen


def test_every_metric_and_label_the_dashboard_queries_is_in_real_output(tmp):
    wanted, exprs = queried()
    assert {"joules_gpu_power_watts", "joules_run_energy_joules_total",
            "joules_run_gpu_step_energy_deviation_ratio", "joules_run_training_metric",
            "joules_run_predicted_energy_joules", "joules_run_co2e_grams_total",
            "joules_node_co2e_grams_total", "joules_component_status",
            "joules_gpu_throttle_reason_active", "joules_inference_energy_joules_total",
            "joules_inference_tokens_total"} <= wanted
    seen = real_output(tmp)
    missing = wanted - set(seen)
    assert not missing, sorted(missing)
    # And the check has teeth: a misspelt name is caught.
    assert "joules_gpu_power_watt" not in seen

    for expr in exprs:
        for name, body in SELECTOR.findall(expr):
            for label, op, value in MATCHER.findall(body):
                if value.startswith("$"):  # a dashboard variable: $hostname, $run_id
                    assert any(label in s for s in seen[name]), (name, label)
                    continue
                values = {s.get(label, "") for s in seen[name]}
                if op == "=":
                    assert value in values, (expr, label, value, values)
                elif op == "=~":
                    assert any(re.fullmatch(value, v) for v in values), (expr, label, values)
                elif op == "!=":
                    assert values - {value}, (expr, label, values)
    # The wrapped run carries the step families with the run's id (the $run_id selectors).
    for name in ("joules_run_last_step_energy_joules", "joules_run_steps_total",
                 "joules_run_gpu_last_step_energy_joules", "joules_run_training_metric"):
        assert all(s["run_id"] == "dash-1" for s in seen[name]), name
