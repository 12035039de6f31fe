"""deploy/prometheus/joules-rules.yml under `promtool test rules`, with input series that joules
itself produced: `joules serve` (and `joules wrap --prometheus` for the run rules) runs on fake NVML
scenarios (a lost GPU, ECC errors, a remap failure, throttling, a lowered power limit, XID
errors, NVLink down and errors, a straggler, a healthy node; and serve with a bad change of its
web configuration), the test scrapes /metrics, turns every scraped sample into a promtool
input series (the scraped value held for an hour, with the `job` and `instance` labels a
Prometheus scrape adds), and checks that each alert fires exactly on the series it should and
that no other alert fires. The recording rules are checked against Prometheus' own arithmetic on
successive real scrapes."""
import base64
import json
import re
import shutil
import subprocess
import signal
import time
import urllib.request

import pytest

from conftest import ROOT, TRAINER, fake_gpus, wait_for
from exporter_util import Process, parse, serve
from test_serve_web_config_reload import HASH, PASSWORD, replace

PROMTOOL = shutil.which("promtool")
RULES = ROOT / "deploy" / "prometheus" / "joules-rules.yml"
INSTANCE = "node-1:19400"

pytestmark = pytest.mark.skipif(PROMTOOL is None,
                                reason="promtool not installed (scripts/install-deps test)")


def h100(watts=300, **health):
    d = {"name": "NVIDIA H100 80GB HBM3", "architecture": "hopper",
         "power": {"type": "constant", "watts": watts}}
    if health:
        d["health"] = health
    return d


def alert_names():
    names = re.findall(r"^\s*- alert: (\w+)$", RULES.read_text(), re.M)
    assert len(names) >= 10, names
    return names


def scrape_serve(scenario, epoch_before_s=10.0, wait_s=1.5, scrapes=1, every_s=0.5,
                 stop_after=False):
    """Samples of `scrapes` scrapes of `joules serve` on the scenario, and the `up` values."""
    env, _ = fake_gpus(scenario, epoch_before_s=epoch_before_s)
    p = serve("--interval", "100", "--hostname", "node-1", env=env)
    try:
        time.sleep(wait_s)
        out = []
        for i in range(scrapes):
            if i:
                time.sleep(every_s)
            out.append(parse(p.scrape()))
        up = [1] * scrapes
        if stop_after:
            p.stop(signal.SIGTERM)
            try:
                p.scrape(timeout=2)
                up.append(1)
            except OSError:
                up.append(0)
        return out, up
    finally:
        p.kill()


def number(v):
    if v != v:  # NaN: promtool's series notation has no use for it here
        return None
    return repr(float(v))


def selector(name, labels):
    ls = dict(labels)
    ls.update({"job": "joules", "instance": INSTANCE})
    body = ",".join(f"{k}={json.dumps(v)}" for k, v in sorted(ls.items()))
    return f"{name}{{{body}}}"


def held_series(samples, up):
    """Every sample held for an hour at 1 min intervals; `up` as Prometheus would record it."""
    series = []
    for (name, labels), v in sorted(samples.items()):
        n = number(v)
        if n is not None:
            series.append({"series": selector(name, labels), "values": f"{n}x60"})
    ups = " ".join(str(u) for u in up[:-1])
    series.append({"series": f'up{{instance="{INSTANCE}",job="joules"}}',
                   "values": (ups + " " if ups else "") + f"{up[-1]}x60"})
    return series


def render(template, labels):
    return re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels.get(m.group(1), ""), template)


def rule_texts():
    """alert name -> (labels, annotations), read from the rules file, whose alerts each have a
    `severity` label and double-quoted `summary` and `description` annotations."""
    text = RULES.read_text()
    out = {}
    blocks = re.split(r"^\s*- (?=alert: )", text, flags=re.M)[1:]
    for block in blocks:
        block = re.split(r"^\s*- (?:name|record): ", block, flags=re.M)[0]
        name = re.match(r"alert: (\w+)", block).group(1)
        severity = re.search(r"^\s*severity: (\w+)$", block, re.M).group(1)
        notes = dict(re.findall(r'^\s*(summary|description): "(.*)"$', block, re.M))
        assert set(notes) == {"summary", "description"}, (name, notes)
        out[name] = ({"severity": severity}, notes)
    assert sorted(out) == sorted(alert_names())
    return out


def expected_alert(name, series_labels):
    labels, annotations = rule_texts()[name]
    ls = {k: v for k, v in series_labels.items()}
    ls.update({"job": "joules", "instance": INSTANCE})
    ls.update(labels)
    return {"exp_labels": ls,
            "exp_annotations": {k: render(v, ls) for k, v in annotations.items()}}


def labels_of(samples, name, **match):
    found = [dict(ls) for (n, ls), _ in samples.items()
             if n == name and all(dict(ls).get(k) == v for k, v in match.items())]
    assert found, (name, match)
    return found


def run_promtool(tmp, tests):
    spec = {"rule_files": [str(RULES)], "evaluation_interval": "1m", "tests": tests}
    path = tmp / "rules_test.yml"
    path.write_text(json.dumps(spec, indent=1))  # JSON is YAML
    r = subprocess.run([PROMTOOL, "test", "rules", str(path)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def alert_case(name, series, firing):
    """A promtool test: at 60 min, each alert fires on exactly the series in `firing`
    ({alert: [series labels]}), and every other alert does not fire."""
    checks = []
    for alert in alert_names():
        exp = [expected_alert(alert, ls) for ls in firing.get(alert, [])]
        checks.append({"eval_time": "60m", "alertname": alert, "exp_alerts": exp})
    return {"name": name, "interval": "1m", "input_series": series, "alert_rule_test": checks}


def test_the_rules_file_passes_promtool_check():
    r = subprocess.run([PROMTOOL, "check", "rules", str(RULES)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_each_alert_fires_on_its_fault_and_none_on_a_healthy_node(tmp):
    cases = []
    firing_by_case = {}

    healthy, up = scrape_serve({"devices": [h100(), h100()]})
    cases.append(alert_case("healthy", held_series(healthy[0], up), {}))

    lost, up = scrape_serve({"devices": [h100(), dict(h100(), faults=[{"at_s": 0,
                                                                       "kind": "lost"}])]},
                            epoch_before_s=-1.0, wait_s=2.0)
    m = lost[0]
    firing_by_case["lost"] = {"JoulesGpuLost": labels_of(m, "joules_gpu_lost", gpu="1"),
                              "JoulesReadingsStale": labels_of(m, "joules_up")}
    cases.append(alert_case("lost", held_series(m, up), firing_by_case["lost"]))

    faulty, up = scrape_serve({"devices": [
        h100(ecc_uncorrected=2, ecc_uncorrected_aggregate=2, retirement_pending=True),
        h100(remap_failure=True, remap_pending=True, remapped_rows_uncorrected=1),
        h100(clocks_event_reasons=0x40 | 0x80),  # HW thermal slowdown, HW power brake
        dict(h100(), limits={"current_w": 500, "default_w": 700}),
    ]})
    m = faulty[0]
    firing = {
        "JoulesGpuEccUncorrectable": labels_of(m, "joules_gpu_ecc_errors_total", gpu="0",
                                               type="uncorrected", scope="volatile"),
        "JoulesGpuRetiredPagesPending": labels_of(m, "joules_gpu_retired_pages_pending", gpu="0"),
        "JoulesGpuRowRemapFailure": labels_of(m, "joules_gpu_row_remap_failure", gpu="1"),
        "JoulesGpuRowRemapPending": labels_of(m, "joules_gpu_row_remap_pending", gpu="1"),
        "JoulesGpuThermalThrottling": labels_of(m, "joules_gpu_throttle_reason_active", gpu="2",
                                                reason="hw_thermal"),
        "JoulesGpuPowerBrake": labels_of(m, "joules_gpu_throttle_reason_active", gpu="2",
                                         reason="power_brake"),
    }
    # The power-limit alert compares two series: its labels are those they share.
    limit = labels_of(m, "joules_gpu_power_limit_watts", gpu="3")
    firing["JoulesGpuPowerLimitChanged"] = limit
    cases.append(alert_case("faults", held_series(m, up), firing))

    # XIDs 2 s after serve starts (scenario time 0 is 10 s before it): 13 on GPU 0, 79 on GPU 1.
    xids, up = scrape_serve({"devices": [
        dict(h100(), xids=[{"at_s": 12.0, "xid": 13, "count": 2}]),
        dict(h100(), xids=[{"at_s": 12.0, "xid": 79}]),
    ]}, wait_s=4.0)
    m = xids[0]
    firing = {"JoulesGpuXid": labels_of(m, "joules_gpu_xid_errors_total", gpu="0", xid="13"),
              "JoulesGpuXidCritical": labels_of(m, "joules_gpu_xid_errors_total", gpu="1",
                                                xid="79")}
    # The XID series appear half an hour in, as they do at a node's first XID; the rest is held.
    series = held_series(m, up)
    for s in series:
        if s["series"].startswith("joules_gpu_xid_errors_total{"):
            s["values"] = "_x30 " + s["values"].replace("x60", "x30")
    cases.append(alert_case("xids", series, firing))

    # NVLink: link 1 of GPU 0 down; its replay count grows by one a minute in the stored series.
    nv, up = scrape_serve({"devices": [h100(nvlink_links=2, nvlink_links_down=[1],
                                            nvlink_replay_errors=3, nvlink_crc_flit_errors=5)]})
    m = nv[0]
    firing = {"JoulesGpuNvlinkDown": labels_of(m, "joules_gpu_nvlink_link_up", gpu="0", link="1"),
              "JoulesGpuNvlinkErrors": labels_of(m, "joules_gpu_nvlink_errors_total", gpu="0",
                                                 type="replay")}
    series = held_series(m, up)
    for s in series:
        if s["series"].startswith("joules_gpu_nvlink_errors_total{") and 'type="replay"' in \
                s["series"]:
            s["values"] = "3+1x60"
    cases.append(alert_case("nvlink", series, firing))

    bad_config = scrape_serve_bad_web_config(tmp)
    firing = {"JoulesWebConfigReloadFailed": labels_of(
        bad_config, "joules_web_config_last_reload_successful")}
    cases.append(alert_case("web config", held_series(bad_config, [1]), firing))

    _, up = scrape_serve({"devices": [h100()]}, stop_after=True)
    assert up == [1, 0]
    cases.append(alert_case("exporter down", held_series(healthy[0], up),
                            {"JoulesExporterDown": [{}]}))

    run = scrape_wrap_straggler()
    m = run[-1]
    straggler = labels_of(m, "joules_run_gpu_step_energy_deviation_ratio", gpu="2")
    others = [dict(ls) for (n, ls), v in m.items()
              if n == "joules_run_gpu_step_energy_deviation_ratio" and v < -0.1]
    assert others == straggler, m  # only GPU 2 lags in the scenario
    cases.append(alert_case("straggler", held_series(m, [1]), {"JoulesRunStraggler": straggler}))

    run_promtool(tmp, cases)


def scrape_serve_bad_web_config(tmp):
    """A scrape of `joules serve --web-config-file` after its file was changed into a bad one."""
    config = tmp / "web.yml"
    config.write_text(f"basic_auth_users:\n  prometheus: {HASH}\n")
    env, _ = fake_gpus({"devices": [h100()]})
    p = serve("--interval", "100", "--hostname", "node-1", "--web-config-file", str(config),
              env=env)
    auth = base64.b64encode(f"prometheus:{PASSWORD}".encode()).decode()

    def scrape():
        request = urllib.request.Request(p.url, headers={"Authorization": f"Basic {auth}"})
        with urllib.request.urlopen(request, timeout=10) as r:
            return parse(r.read().decode())

    try:
        replace(config, "basic_auth_users: [not, a, map]\n")
        p.proc.send_signal(signal.SIGHUP)
        got = {}

        def failed():
            got["m"] = scrape()
            return any(n == "joules_web_config_last_reload_successful" and v == 0
                       for (n, _), v in got["m"].items())

        assert wait_for(failed, timeout=20.0, step=0.1), "the reload never failed"
        return got["m"]
    finally:
        p.kill()


def scrape_wrap_straggler(scrapes=3):
    """A run on four GPUs where GPU 2 draws 25 % less (tests/cli/test_wrap_nvml.py)."""
    devices = [{"power": {"type": "constant", "watts": 600 if i != 2 else 450}}
               for i in range(4)]
    env, _ = fake_gpus({"devices": devices})
    env["JOULES_HOSTNAME"] = "node-1"
    p = Process("wrap", "--no-inline", "--run-id", "job-7",
                "--prometheus", "127.0.0.1:0", "--straggler-window", "10", "--",
                TRAINER, "--steps", "400", "--step-ms", "20", "--setup-ms", "50", env=env)
    try:
        out = []
        deadline = time.monotonic() + 30
        while len(out) < scrapes and time.monotonic() < deadline:
            time.sleep(0.5)
            m = parse(p.scrape())
            if any(n == "joules_run_gpu_step_energy_deviation_ratio" for n, _ in m):
                out.append(m)
        assert len(out) == scrapes, "no per-GPU deviation in the run's /metrics"
        return out
    finally:
        p.kill()


def prometheus_increase(points, range_start, range_end):
    """Prometheus 2's extrapolatedRate() for increase() of a counter (promql/functions.go)."""
    if len(points) < 2:
        return None
    result = points[-1][1] - points[0][1]
    last = 0.0
    for _, v in points:
        if v < last:
            result += last
        last = v
    to_start = points[0][0] - range_start
    to_end = range_end - points[-1][0]
    sampled = points[-1][0] - points[0][0]
    average = sampled / (len(points) - 1)
    if result > 0 and points[0][1] >= 0:
        to_zero = sampled * (points[0][1] / result)
        if to_zero < to_start:
            to_start = to_zero
    threshold = average * 1.1
    interval = sampled
    interval += to_start if to_start < threshold else average / 2
    interval += to_end if to_end < threshold else average / 2
    return result * (interval / sampled)


def test_the_energy_recording_rules_give_prometheus_own_numbers(tmp):
    # Four scrapes of a node 0.5 s apart, laid out 1 min apart as Prometheus would store them.
    scrapes, _ = scrape_serve({"devices": [h100(300), h100(450)]}, scrapes=4)
    run = scrape_wrap_straggler(scrapes=1)[0]
    keys = sorted({k for s in scrapes for k in s})
    series = []
    for name, labels in keys:
        vals = [s.get((name, labels)) for s in scrapes]
        if any(v is None or v != v for v in vals):
            continue
        series.append({"series": selector(name, labels),
                       "values": " ".join(repr(float(v)) for v in vals)})
    for (name, labels), v in sorted(run.items()):
        if name.startswith("joules_run_") and v == v:
            series.append({"series": selector(name, labels), "values": f"{v!r}x3"})

    end = 180.0  # the 4th sample, at 3 min
    def increase_of(pattern):
        total = 0.0
        for name, labels in keys:
            if re.fullmatch(pattern, name) and dict(labels).get("hostname") == "node-1":
                pts = [(60.0 * i, s[(name, labels)]) for i, s in enumerate(scrapes)]
                total += prometheus_increase(pts, end - 86400.0, end)
        return total

    def rate5m_of(name):
        total = 0.0
        for n, labels in keys:
            if n == name:
                pts = [(60.0 * i, s[(n, labels)]) for i, s in enumerate(scrapes)]
                total += prometheus_increase(pts, end - 300.0, end) / 300.0
        return total

    day_j = increase_of(r"joules_(gpu|cpu|dram)_energy_joules_total")
    day_kwh = increase_of(r"joules_node_energy_kwh_total")
    power_w = rate5m_of("joules_gpu_energy_joules_total")
    assert day_j > 0 and day_kwh > 0 and power_w > 0
    run_j = sum(v for (n, _), v in run.items() if n == "joules_run_energy_joules_total")
    assert run_j > 0

    def close(record, value, by):
        tol = 1e-9 * abs(value) + 1e-12
        return {"expr": f"abs({record} - {value!r}) <= bool {tol!r}", "eval_time": "3m",
                "exp_samples": [{"labels": "{" + by + "}", "value": 1}]}

    tests = [{"name": "energy", "interval": "1m", "input_series": series, "promql_expr_test": [
        close("hostname:joules_energy_joules:increase1d", day_j, 'hostname="node-1"'),
        close("hostname:joules_node_energy_kwh:increase1d", day_kwh, 'hostname="node-1"'),
        close("hostname:joules_gpu_power_watts:rate5m", power_w, 'hostname="node-1"'),
        close("run_id:joules_run_energy_joules:sum", run_j, 'run_id="job-7"'),
        close("run_id_hostname:joules_run_energy_joules:sum", run_j,
              'hostname="node-1",run_id="job-7"'),
    ]}]
    run_promtool(tmp, tests)
