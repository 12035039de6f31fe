"""dashboards/joules.json queries only metrics that joules really exposes: every name in its
PromQL (panels and variables) must appear in real /metrics output of `joules serve` (fake NVML
with health, RAPL from a powercap fixture, --dcgm-compat) or of `joules run|wrap --prometheus`."""
import json
import re
import subprocess
import time

import pytest

from conftest import BUILD, ROOT, fake_gpus
from exporter_util import Process, names

DASHBOARD = ROOT / "dashboards" / "joules.json"
PRINT = BUILD / "tests" / "joules_exposition_print"
METRIC = re.compile(r"\b((?:joules|DCGM)_[A-Za-z0-9_]+)\b")

# The step, training and prediction families of a wrapped run: until wrap calls run_metrics'
# setters (src/export/run_metrics.hpp), they are checked against the same families filled through
# those setters by tests/fixtures/exposition_print.cpp (wrap-steps) instead of wrap's output.
STEP_FAMILIES = {"joules_run_last_step_energy_joules", "joules_run_last_step_duration_seconds",
                 "joules_run_gpu_step_energy_deviation_ratio",
                 "joules_run_gpu_last_step_energy_joules", "joules_run_training_metric",
                 "joules_run_predicted_energy_joules", "joules_run_predicted_remaining_seconds",
                 "joules_run_predicted_duration_seconds", "joules_run_last_step",
                 "joules_run_total_steps", "joules_run_predicted_total_steps"}


def queried_names():
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
                  "joules up"):
        assert topic in titles, topic


def test_every_metric_the_dashboard_queries_exists_in_real_output(tmp):
    wanted, exprs = queried_names()
    assert {"joules_gpu_power_watts", "joules_run_energy_joules_total",
            "joules_run_gpu_step_energy_deviation_ratio",
            "joules_gpu_throttle_reason_active"} <= wanted

    health = {"gpu_util_percent": 50, "clocks_event_reasons": 4, "tensor_util_percent": 20.0,
              "ecc_uncorrected": 1, "remapped_rows_corrected": 1}
    env, _ = fake_gpus({"devices": [{"architecture": "hopper", "health": health,
                                     "power": {"type": "constant", "watts": 300}}]})
    env["JOULES_POWERCAP_ROOT"] = str(ROOT / "tests" / "fixtures" / "powercap" / "intel-2s-dram")
    seen = set()
    node = Process("serve", "--listen", "127.0.0.1:0", "--dcgm-compat", env=env)
    try:
        time.sleep(1.3)
        node.scrape()
        seen |= names(node.scrape())
    finally:
        node.kill()
    for sub in ("run", "wrap"):
        env, _ = fake_gpus({"devices": [{"architecture": "hopper"}, {"architecture": "hopper"}]})
        r = Process(sub, "--prometheus", "0", "--", "sleep", "1.5", env=env)
        try:
            time.sleep(0.8)
            seen |= names(r.scrape())
        finally:
            r.kill()
    missing = wanted - seen
    steps = subprocess.run([str(PRINT), "wrap-steps"], capture_output=True, text=True,
                           check=True).stdout
    assert missing <= STEP_FAMILIES, sorted(missing - STEP_FAMILIES)
    assert missing <= names(steps), sorted(missing - names(steps))
    # And the check has teeth: a misspelt name is caught.
    assert "joules_gpu_power_watt" not in seen | names(steps)
