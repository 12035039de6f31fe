"""`joules serve`, black-box: a node exporter over the fake NVML (and the sim backend), scraped
by the test as Prometheus would."""
import gzip
import http.client
import json
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request

import pytest

from conftest import BUILD, JOULES, ROOT, SANITIZED, fake_gpus, joules, truth_j, wait_for
from exporter_util import ADDRESS, clean_env, names, one, parse, serve, series

PROMTOOL = shutil.which("promtool")
SLOW = 3.0 if SANITIZED else 1.0


def h100(power, **extra):
    d = {"name": "NVIDIA H100 80GB HBM3", "architecture": "hopper", "latency_us": 20,
         "power": power}
    d.update(extra)
    return d


HEALTH = {"gpu_util_percent": 77, "memory_util_percent": 31, "temperature_c": 61,
          "memory_temperature_c": 70, "clocks_mhz": {"sm": 1500, "memory": 2619},
          "clocks_event_reasons": 4 | 64,  # SwPowerCap | HwThermalSlowdown (docs/nvml-notes.md §7)
          "memory_used_bytes": 2147483648, "remapped_rows_corrected": 3,
          "pcie_replay_counter": 5, "sm_util_percent": 42.5, "tensor_util_percent": 12.5,
          "encoder_util_percent": 40, "decoder_util_percent": 15}


# dcgm-exporter's counters as its etc/default-counters.csv declares them (docs/nvml-notes.md §10.1;
# SM_ACTIVE, SM_OCCUPANCY and the NVLink error counts are there commented out, with these help
# texts).
DCGM_DEFAULTS = {
    "DCGM_FI_DEV_SM_CLOCK": ("gauge", "SM clock frequency (in MHz)."),
    "DCGM_FI_DEV_MEM_CLOCK": ("gauge", "Memory clock frequency (in MHz)."),
    "DCGM_FI_DEV_MEMORY_TEMP": ("gauge", "Memory temperature (in C)."),
    "DCGM_FI_DEV_GPU_TEMP": ("gauge", "GPU temperature (in C)."),
    "DCGM_FI_DEV_POWER_USAGE": ("gauge", "Power draw (in W)."),
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": ("counter",
                                             "Total energy consumption since boot (in mJ)."),
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": ("counter", "Total number of PCIe retries."),
    "DCGM_FI_DEV_GPU_UTIL": ("gauge", "GPU utilization (in %)."),
    "DCGM_FI_DEV_MEM_COPY_UTIL": ("gauge", "Memory utilization (in %)."),
    "DCGM_FI_DEV_ENC_UTIL": ("gauge", "Encoder utilization (in %)."),
    "DCGM_FI_DEV_DEC_UTIL": ("gauge", "Decoder utilization (in %)."),
    "DCGM_FI_DEV_XID_ERRORS": ("gauge", "Value of the last XID error encountered."),
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL": (
        "counter", "Total number of NVLink flow-control CRC errors."),
    "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL": (
        "counter", "Total number of NVLink data CRC errors."),
    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL": ("counter", "Total number of NVLink retries."),
    "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL": (
        "counter", "Total number of NVLink recovery errors."),
    "DCGM_FI_DEV_FB_FREE": ("gauge", "Framebuffer memory free (in MiB)."),
    "DCGM_FI_DEV_FB_USED": ("gauge", "Framebuffer memory used (in MiB)."),
    "DCGM_FI_DEV_FB_RESERVED": ("gauge", "Framebuffer memory reserved (in MiB)."),
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": (
        "counter", "Number of remapped rows for uncorrectable errors"),
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": (
        "counter", "Number of remapped rows for correctable errors"),
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": ("gauge", "Whether remapping of rows has failed"),
    "DCGM_FI_PROF_SM_ACTIVE": ("gauge", "The ratio of cycles an SM has at least 1 warp assigned."),
    "DCGM_FI_PROF_SM_OCCUPANCY": ("gauge", "The ratio of number of warps resident on an SM."),
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": ("gauge",
                                        "Ratio of cycles the tensor (HMMA) pipe is active."),
    "DCGM_FI_PROF_DRAM_ACTIVE": (
        "gauge", "Ratio of cycles the device memory interface is active sending or receiving data."),
    "DCGM_FI_PROF_PCIE_TX_BYTES": (
        "gauge", "The rate of data transmitted over the PCIe bus - including both protocol "
                 "headers and data payloads - in bytes per second."),
    "DCGM_FI_PROF_PCIE_RX_BYTES": (
        "gauge", "The rate of data received over the PCIe bus - including both protocol headers "
                 "and data payloads - in bytes per second."),
}

# Not in that file, but DCGM's field 112 (docs/nvml-notes.md §10.1), with its header's comment.
DCGM_EXTRAS = {
    "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": (
        "gauge", "Current clock throttle reasons (bitmask of DCGM_CLOCKS_THROTTLE_REASON_*)"),
}


def test_every_gpu_reading_with_its_labels_in_si_units(procs):
    scenario = {"devices": [h100({"type": "constant", "watts": 300}, health=HEALTH),
                            h100({"type": "constant", "watts": 200})]}
    env, _ = fake_gpus(scenario)
    p = serve("--hostname", "node-a", "--label", "cluster=west", "--label", "gpu=mine",
              "--interval", "100", env=env)
    procs.append(p)
    time.sleep(1.3)  # a health reading has been taken
    m = parse(p.scrape())
    gpu0 = {"gpu": "0", "uuid": "GPU-00000000-0000-4000-8000-000000000000",
            "model": "NVIDIA H100 80GB HBM3", "hostname": "node-a", "cluster": "west",
            "label_gpu": "mine"}
    assert one(m, "joules_gpu_power_watts", **gpu0) == 300
    assert one(m, "joules_gpu_power_watts", gpu="1") == 200
    assert one(m, "joules_gpu_utilization_ratio", **gpu0) == 0.77
    assert one(m, "joules_gpu_memory_utilization_ratio", **gpu0) == 0.31
    assert one(m, "joules_gpu_encoder_utilization_ratio", **gpu0) == 0.40
    assert one(m, "joules_gpu_decoder_utilization_ratio", **gpu0) == 0.15
    assert one(m, "joules_gpu_temperature_celsius", **gpu0) == 61
    assert one(m, "joules_gpu_memory_temperature_celsius", **gpu0) == 70
    assert one(m, "joules_gpu_sm_clock_hertz", **gpu0) == 1.5e9
    assert one(m, "joules_gpu_memory_used_bytes", **gpu0) == 2147483648
    assert one(m, "joules_gpu_throttle_reason_active", reason="power_cap", **gpu0) == 1
    assert one(m, "joules_gpu_throttle_reason_active", reason="hw_thermal", **gpu0) == 1
    assert one(m, "joules_gpu_throttle_reason_active", reason="sw_thermal", **gpu0) == 0
    assert one(m, "joules_gpu_remapped_rows_total", type="correctable", **gpu0) == 3
    assert one(m, "joules_gpu_pcie_replays_total", **gpu0) == 5
    assert one(m, "joules_gpu_pcie_link_generation", **gpu0) == 5
    assert one(m, "joules_gpu_sm_active_ratio", **gpu0) == 0.425
    assert one(m, "joules_gpu_tensor_active_ratio", **gpu0) == 0.125
    assert one(m, "joules_gpu_power_limit_watts", **gpu0) == 700
    assert one(m, "joules_gpu_lost", **gpu0) == 0
    info = series(m, "joules_gpu_info", gpu="0")[0][0]
    assert info["pci_bus_id"] == "00000000:18:00.0" and info["driver_version"] == "570.86.15"
    assert one(m, "joules_up", hostname="node-a") == 1
    assert one(m, "joules_scrapes_total", hostname="node-a") == 1
    assert series(m, "joules_build_info")[0][0]["backend"] == "nvml"
    assert not any(n.startswith("DCGM_") for n in names(p.scrape()))
    assert one(parse(p.scrape()), "joules_scrapes_total", hostname="node-a") == 3
    assert one(parse(p.scrape()), "joules_scrape_duration_seconds", hostname="node-a") < 0.05
    rc, _, err = p.stop(signal.SIGTERM)
    assert rc == 0, err
    assert "label 'gpu' is exposed as 'label_gpu'" in err


def test_dcgm_compat_adds_dcgm_exporters_names_and_labels(procs):
    env, _ = fake_gpus({"devices": [h100({"type": "constant", "watts": 312.5}, health=HEALTH)]})
    p = serve("--dcgm-compat", "--hostname", "node-a", "--label", "cluster=west", env=env)
    procs.append(p)
    time.sleep(1.2)
    m = parse(p.scrape())
    labels = {"cluster": "west", "gpu": "0", "UUID": "GPU-00000000-0000-4000-8000-000000000000",
              "pci_bus_id": "00000000:18:00.0", "device": "nvidia0",
              "modelName": "NVIDIA H100 80GB HBM3", "hostname": "node-a", "Hostname": "node-a",
              "DCGM_FI_DRIVER_VERSION": "570.86.15"}
    assert one(m, "DCGM_FI_DEV_POWER_USAGE", **labels) == 312.5
    assert one(m, "DCGM_FI_DEV_GPU_UTIL", **labels) == 77
    assert one(m, "DCGM_FI_DEV_GPU_TEMP", **labels) == 61
    assert one(m, "DCGM_FI_DEV_SM_CLOCK", **labels) == 1500
    assert one(m, "DCGM_FI_DEV_FB_USED", **labels) == 2048
    assert one(m, "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", **labels) == 3
    assert one(m, "DCGM_FI_DEV_ENC_UTIL", **labels) == 40
    assert one(m, "DCGM_FI_DEV_DEC_UTIL", **labels) == 15
    assert one(m, "DCGM_FI_DEV_XID_ERRORS", **labels) == 0  # watching, none yet
    assert one(m, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", **labels) == 4 | 64
    counter_mj = one(m, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", **labels)
    assert counter_mj > 0 and counter_mj == int(counter_mj)  # the driver's mJ, unscaled
    assert one(m, "joules_gpu_power_watts", gpu="0") == 312.5  # joules' names stay
    # Exactly dcgm-exporter's labels: `hostname` as it is now, `Hostname` as it was before
    # d5e5f51 (docs/nvml-notes.md §10.2), so that dashboards for either version work.
    for name in {n for n, _ in m if n.startswith("DCGM_")}:
        for found, _ in series(m, name):
            assert set(found) == set(labels), (name, found)
    # HELP and TYPE as dcgm-exporter's default counters file has them (docs/nvml-notes.md §10.1).
    text = p.scrape()
    declared = dict(re.findall(r"^# TYPE (DCGM_\S+) (\S+)$", text, re.M))
    helps = dict(re.findall(r"^# HELP (DCGM_\S+) (.*)$", text, re.M))
    known = {**DCGM_DEFAULTS, **DCGM_EXTRAS}
    for name, (kind, help_text) in known.items():
        if name in declared:
            assert (declared[name], helps[name]) == (kind, help_text), name
    assert set(declared) <= set(known), set(declared) - set(known)
    assert len(declared) >= 15


def _get(p, method="GET", headers=None):
    host, port = p.address.rsplit(":", 1)
    c = http.client.HTTPConnection(host, int(port), timeout=10)
    c.request(method, "/metrics", headers=headers or {})
    r = c.getresponse()
    body = r.read()
    c.close()
    return r, body


def test_head_is_not_a_scrape_and_gzip_is_the_same_exposition(procs):
    env, _ = fake_gpus({"devices": [h100({"type": "constant", "watts": 300}, health=HEALTH)]})
    p = serve("--dcgm-compat", "--hostname", "node-a", env=env)
    procs.append(p)
    assert wait_for(lambda: "joules_gpu_utilization_ratio" in p.scrape(), timeout=10)
    r, plain = _get(p)
    assert r.status == 200 and r.getheader("Content-Encoding") is None
    assert r.getheader("Vary") == "Accept-Encoding"
    first = one(parse(plain.decode()), "joules_scrapes_total")
    for _ in range(3):
        r, body = _get(p, "HEAD")
        assert r.status == 200 and body == b""
        assert int(r.getheader("Content-Length")) == pytest.approx(len(plain), rel=0.01)
    # Prometheus asks for gzip: one gzip member, the same families and values.
    r, body = _get(p, headers={"Accept-Encoding": "gzip"})
    assert r.getheader("Content-Encoding") == "gzip"
    assert int(r.getheader("Content-Length")) == len(body) < len(plain) / 4
    text = gzip.decompress(body).decode()
    m = parse(text)
    assert one(m, "joules_scrapes_total") == first + 1  # the three HEADs were not scrapes
    assert names(text) == names(plain.decode())
    assert one(m, "joules_gpu_power_watts", hostname="node-a") == 300
    assert one(m, "DCGM_FI_DEV_POWER_USAGE", gpu="0") == 300
    # Every family once, with its HELP and TYPE once, before its samples.
    for t in (plain.decode(), text):
        helps = re.findall(r"^# HELP (\S+) ", t, re.M)
        types = re.findall(r"^# TYPE (\S+) ", t, re.M)
        assert len(helps) == len(set(helps)) and helps == types
        assert set(helps) == names(t), set(helps) ^ names(t)
    r, body = _get(p)
    assert one(parse(body.decode()), "joules_scrapes_total") == first + 2


def test_energy_counter_advances_at_the_scenarios_power(procs):
    scenario = {"devices": [h100({"type": "steps", "points": [[0, 150], [13, 450]]},
                                 energy_counter={"update_ms": 20, "phase_ms": 3})]}
    env, epoch = fake_gpus(scenario)

    def reading():
        t = time.monotonic()
        m = parse(p.scrape())
        # The instant of the readings behind this scrape.
        return (t - one(m, "joules_reading_age_seconds"),
                one(m, "joules_gpu_energy_joules_total", gpu="0"))

    p = serve("--interval", "50", env=env)
    procs.append(p)
    time.sleep(0.5)
    t0, e0 = reading()
    time.sleep(3.0)
    t1, e1 = reading()
    truth = truth_j(scenario, 0, epoch, t0, t1)
    assert e1 - e0 == pytest.approx(truth, rel=0.02), (e1 - e0, truth)


def test_only_the_sampler_thread_calls_nvml_under_concurrent_scrapes(procs, tmp):
    log = tmp / "calls.jsonl"
    env, _ = fake_gpus({"devices": [h100({"type": "constant", "watts": 250}) for _ in range(8)]})
    env["FAKE_NVML_CALL_LOG"] = str(log)
    p = serve("--interval", "50", env=env)
    procs.append(p)
    errors = []

    def scraper():
        try:
            for _ in range(20):
                assert len(series(parse(p.scrape()), "joules_gpu_power_watts")) == 8
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=scraper) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    rc, _, err = p.stop(signal.SIGINT)
    assert rc == 0, err
    record = json.loads(log.read_text().splitlines()[-1])
    assert record["device_call_threads"] == 1, record


def test_sigterm_and_sigint_end_it_cleanly_and_close_the_port(procs):
    for sig in (signal.SIGTERM, signal.SIGINT):
        p = serve("--backend", "sim", "--sim-gpus", "2")
        procs.append(p)
        p.scrape()
        host, port = p.address.rsplit(":", 1)
        t0 = time.monotonic()
        rc, out, err = p.stop(sig, timeout=10)
        assert rc == 0, err
        assert time.monotonic() - t0 < 2.0 * SLOW
        assert out == ""  # nothing on stdout, ever
        with pytest.raises(OSError):
            socket.create_connection((host, int(port)), timeout=2).close()


def test_an_xid_burst_is_counted_by_number_with_the_last_for_dcgm(procs):
    # Scenario time 0 is 10 s in the past: the XIDs come 2 s after serve starts, once it watches.
    burst = [{"at_s": 12.0, "xid": 13, "count": 4}, {"at_s": 12.2, "xid": 79}]
    scenario = {"devices": [h100({"type": "constant", "watts": 300}, xids=burst),
                            h100({"type": "constant", "watts": 300})]}
    env, _ = fake_gpus(scenario)
    p = serve("--dcgm-compat", "--interval", "100", env=env)
    procs.append(p)

    def both():
        m = parse(p.scrape())
        return series(m, "joules_gpu_xid_errors_total", gpu="0", xid="79") != []

    assert wait_for(both, timeout=15.0, step=0.2), p.scrape()
    m = parse(p.scrape())
    assert one(m, "joules_gpu_xid_errors_total", gpu="0", xid="13") == 4
    assert one(m, "joules_gpu_xid_errors_total", gpu="0", xid="79") == 1
    assert series(m, "joules_gpu_xid_errors_total", gpu="1") == []
    assert one(m, "DCGM_FI_DEV_XID_ERRORS", gpu="0") == 79
    assert one(m, "DCGM_FI_DEV_XID_ERRORS", gpu="1") == 0
    text = p.scrape()
    assert "# TYPE joules_gpu_xid_errors_total counter" in text
    if PROMTOOL:
        r = subprocess.run([PROMTOOL, "check", "metrics"], input=text.encode(),
                           capture_output=True, timeout=60)
        for line in (r.stdout + r.stderr).decode().splitlines():
            assert line.startswith("DCGM_"), line


def test_nvlink_errors_and_links_with_dcgm_names(procs):
    links = {"nvlink_links": 4, "nvlink_links_down": [2], "nvlink_crc_flit_errors": 9,
             "nvlink_replay_errors": 3, "nvlink_errors_link": 1}
    scenario = {"devices": [h100({"type": "constant", "watts": 300}, health=links),
                            h100({"type": "constant", "watts": 300})]}
    env, _ = fake_gpus(scenario)
    p = serve("--dcgm-compat", "--interval", "100", env=env)
    procs.append(p)
    time.sleep(1.3)
    m = parse(p.scrape())
    assert one(m, "joules_gpu_nvlink_errors_total", gpu="0", type="crc_flit") == 9
    assert one(m, "joules_gpu_nvlink_errors_total", gpu="0", type="crc_data") == 0
    assert one(m, "joules_gpu_nvlink_errors_total", gpu="0", type="replay") == 3
    assert [one(m, "joules_gpu_nvlink_link_up", gpu="0", link=str(k)) for k in range(4)] == \
        [1, 1, 0, 1]
    # Each link's own counts, read because the GPU has errors: all on link 1.
    per_link = {(l["link"], l["type"]): v
                for l, v in series(m, "joules_gpu_nvlink_link_errors_total", gpu="0")}
    assert per_link[("1", "crc_flit")] == 9 and per_link[("1", "replay")] == 3
    assert per_link[("1", "crc_data")] == 0 and per_link[("0", "replay")] == 0
    assert {link for link, _ in per_link} == {"0", "1", "2", "3"}
    # A GPU without NVLink has none of these series.
    assert series(m, "joules_gpu_nvlink_link_errors_total", gpu="1") == []
    assert series(m, "joules_gpu_nvlink_errors_total", gpu="1") == []
    assert series(m, "joules_gpu_nvlink_link_up", gpu="1") == []
    assert one(m, "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", gpu="0") == 9
    assert one(m, "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", gpu="0") == 3
    assert series(m, "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", gpu="1") == []


def test_a_lost_gpu_is_reported_and_joules_up_drops(procs):
    scenario = {"devices": [h100({"type": "constant", "watts": 300}),
                            h100({"type": "constant", "watts": 300},
                                 faults=[{"at_s": 0, "kind": "lost"}])]}
    env, _ = fake_gpus(scenario, epoch_before_s=-1.0)  # the fault strikes a second in
    p = serve("--interval", "100", env=env)
    procs.append(p)
    time.sleep(2.0)
    m = parse(p.scrape())
    assert one(m, "joules_gpu_lost", gpu="1") == 1
    assert one(m, "joules_gpu_lost", gpu="0") == 0
    assert series(m, "joules_gpu_power_watts", gpu="1") == []
    assert one(m, "joules_up") == 0


def test_gpus_unreadable_from_the_start_are_served_as_lost(procs):
    # GPU 1 fell off the bus before serve started (its handle is refused); GPU 2's handle works
    # but every reading of energy and power fails.  Both are listed from the first scrape, as a
    # GPU lost later is: joules_gpu_lost 1, no readings, joules_up 0.
    scenario = {"devices": [h100({"type": "constant", "watts": 300}),
                            h100({"type": "constant", "watts": 300},
                                 faults=[{"at_s": 0, "kind": "lost"}]),
                            h100({"type": "constant", "watts": 300},
                                 faults=[{"at_s": 0, "kind": "error", "code": "UNKNOWN"}])]}
    env, _ = fake_gpus(scenario)
    p = serve("--interval", "100", env=env)
    procs.append(p)
    assert "serving 3 GPU(s)" in p.stderr_lines[-1], p.stderr_lines
    m = parse(p.scrape())
    assert one(m, "joules_gpu_lost", gpu="0") == 0
    for gpu in ("1", "2"):
        assert one(m, "joules_gpu_lost", gpu=gpu) == 1
        assert series(m, "joules_gpu_power_watts", gpu=gpu) == []
        assert series(m, "joules_gpu_energy_joules_total", gpu=gpu) == []
    assert one(m, "joules_up") == 0
    # Every GPU readable: up.
    env, _ = fake_gpus({"devices": [h100({"type": "constant", "watts": 300})]})
    p2 = serve("--interval", "100", env=env)
    procs.append(p2)
    assert one(parse(p2.scrape()), "joules_up") == 1


def test_simulated_energy_is_never_labelled_measured(procs, tmp_path):
    # On the sim backend, everything that says where energy came from says simulated: serve's
    # /metrics, run's records and summary line, and monitor.
    no_rapl = {"JOULES_POWERCAP_ROOT": "/nonexistent-powercap"}
    p = serve("--backend", "sim", "--sim-gpus", "2", env=no_rapl)
    procs.append(p)
    m = parse(p.scrape())
    assert one(m, "joules_component_status", component="gpu", status="simulated") == 1
    assert one(m, "joules_component_status", component="gpu", status="measured") == 0
    claims = [(n, dict(ls)) for (n, ls), v in m.items()
              if v == 1 and "measured" in dict(ls).values()]
    assert claims == [], claims
    out = tmp_path / "run.jsonl"
    r = joules("run", "--backend", "sim", "--sim-gpus", "2", "--output", out, "--", "sleep",
               "0.3", env=no_rapl)
    assert r.returncode == 0, r.stderr
    records = [json.loads(l) for l in out.read_text().splitlines()]
    start = next(x for x in records if x["type"] == "session_start")
    assert [d["method"] for d in start["devices"]] == ["simulated", "simulated"]
    assert not any(c["measured"] for c in start["components"]), start["components"]
    end = next(x for x in records if x["type"] == "session_end")
    assert end["method"] == "simulated"
    samples = [x for x in records if x["type"] == "sample"]
    assert samples and all(d.get("method", "simulated") == "simulated"
                           for x in samples for d in x.get("devices", [])), samples[0]
    summary = r.stderr.splitlines()[-1]
    assert "simulated" in summary and "measured" not in summary.replace("not measured", ""), summary
    r = joules("monitor", "--backend", "sim", "--sim-gpus", "2", "--once", "--json", env=no_rapl)
    sample = json.loads(r.stdout)
    assert [d["method"] for d in sample["devices"]] == ["simulated", "simulated"], sample
    r = joules("monitor", "--backend", "sim", "--sim-gpus", "2", "--once", "--plain", env=no_rapl)
    assert r.returncode == 0 and "measured" not in r.stdout, r.stdout


def test_output_writes_samples_rotated_past_its_size(procs, tmp_path):
    # serve --output writes monitor's JSON samples every interval, rotated as monitor's are:
    # each file is whole lines that parse on their own, oldest to newest FILE.2, FILE.1, FILE.
    out = tmp_path / "node.jsonl"
    no_rapl = {"JOULES_POWERCAP_ROOT": "/nonexistent-powercap"}
    p = serve("--backend", "sim", "--sim-gpus", "2", "--interval", "50", "--output", out,
              "--output-max-size", "8000", "--output-keep", "2", env=no_rapl)
    procs.append(p)
    p.scrape()
    time.sleep(2.0)
    rc, stdout, err = p.stop(signal.SIGTERM)
    assert rc == 0 and stdout == "", err
    files = sorted(x.name for x in tmp_path.iterdir() if x.name.startswith("node.jsonl"))
    assert files == ["node.jsonl", "node.jsonl.1", "node.jsonl.2"], files
    times = []
    for name in ("node.jsonl.2", "node.jsonl.1", "node.jsonl"):
        text = (tmp_path / name).read_text()
        assert len(text.encode()) <= 8000 and text.endswith("\n"), name
        records = [json.loads(line) for line in text.splitlines()]
        assert records and all(r["type"] == "monitor_sample" for r in records), name
        assert all([d["method"] for d in r["devices"]] == ["simulated", "simulated"]
                   for r in records)
        times += [r["monotonic_s"] for r in records]
    assert len((tmp_path / "node.jsonl.2").read_text().splitlines()) == 2  # a full file
    assert times == sorted(times) and len(set(times)) == len(times)  # oldest first, none twice


def test_output_rotation_options_need_output():
    r = joules("serve", "--listen", "127.0.0.1:0", "--backend", "sim", "--output-keep", "3")
    assert r.returncode == 2 and "--output" in r.stderr, r.stderr


@pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (scripts/install-deps test)")
def test_real_output_passes_promtool(procs):
    p = serve("--backend", "sim", "--sim-gpus", "8", "--label", "cluster=a")
    procs.append(p)
    time.sleep(1.2)
    r = subprocess.run([PROMTOOL, "check", "metrics"], input=p.scrape().encode(),
                       capture_output=True, timeout=60)
    assert (r.returncode, r.stdout + r.stderr) == (0, b"")
    p2 = serve("--backend", "sim", "--sim-gpus", "2", "--dcgm-compat")
    procs.append(p2)
    time.sleep(1.2)
    r = subprocess.run([PROMTOOL, "check", "metrics"], input=p2.scrape().encode(),
                       capture_output=True, timeout=60)
    # dcgm-exporter's own names break promtool's lint rules (camelCase labels, a counter without
    # _total) but parse; joules' names raise nothing.
    assert r.returncode == 3, r
    for line in (r.stdout + r.stderr).decode().splitlines():
        assert line.startswith("DCGM_"), line


def test_carbon_cost_and_components_of_the_node(procs, tmp):
    scenario = {"devices": [h100({"type": "constant", "watts": 300})]}
    env, _ = fake_gpus(scenario)
    env["JOULES_POWERCAP_ROOT"] = str(ROOT / "tests" / "fixtures" / "powercap" / "intel-2s-dram")
    env["JOULES_REGION"] = "FR"
    p = serve("--pue", "1.2", "--price-per-kwh", "0.25", "--currency", "EUR", "--interval", "100",
              "--hostname", "node-a", env=env)
    procs.append(p)
    time.sleep(1.2)
    m = parse(p.scrape())
    measured = sum(v for n in ("joules_gpu_energy_joules_total", "joules_cpu_energy_joules_total",
                               "joules_dram_energy_joules_total") for _, v in series(m, n))
    assert series(m, "joules_cpu_energy_joules_total")  # RAPL is served too
    kwh = one(m, "joules_node_energy_kwh_total", hostname="node-a")
    assert kwh == pytest.approx(measured * 1.2 / 3.6e6, rel=1e-9) and kwh > 0
    [(labels, co2e)] = series(m, "joules_node_co2e_grams_total")
    assert labels["region"] == "FR" and labels["method"] == "country_average"
    intensity = one(m, "joules_carbon_intensity_grams_per_kwh", region="FR")
    assert co2e == pytest.approx(kwh * intensity, rel=1e-9)
    assert one(m, "joules_node_cost_total", currency="EUR") == pytest.approx(kwh * 0.25, rel=1e-9)
    assert one(m, "joules_pue", source="--pue") == 1.2
    for component in ("gpu", "cpu", "dram"):
        assert one(m, "joules_component_status", component=component, status="measured") == 1
    # The node's footprint grows with its energy.
    time.sleep(0.5)
    assert one(parse(p.scrape()), "joules_node_energy_kwh_total") > kwh
    # --components leaves CPU and DRAM out: not served, and said so.
    q = serve("--components", "gpu", env=env)
    procs.append(q)
    time.sleep(0.5)
    m = parse(q.scrape())
    assert series(m, "joules_cpu_energy_joules_total") == []
    assert one(m, "joules_component_status", component="cpu", status="off") == 1


def test_unreadable_rapl_counters_are_said_with_the_fix(procs):
    base = pathlib.Path(tempfile.mkdtemp(prefix="joules-rapl-"))
    try:
        os.chmod(base, 0o755)
        root = base / "amd-1p"
        shutil.copytree(ROOT / "tests" / "fixtures" / "powercap" / "amd-1p", root)
        for f in [root, *root.rglob("*")]:
            os.chmod(f, 0o755 if f.is_dir() else 0o644)
        os.chmod(root / "intel-rapl:0" / "energy_uj", 0)
        env, _ = fake_gpus({"devices": [h100({"type": "constant", "watts": 300})]})
        env["JOULES_POWERCAP_ROOT"] = str(root)
        cmd = [JOULES, "serve", "--listen", "127.0.0.1:0"]
        if os.geteuid() == 0:
            if not shutil.which("setpriv"):
                pytest.skip("running as root without setpriv: mode-000 files stay readable")
            cmd = [shutil.which("setpriv"), "--reuid=65534", "--regid=65534", "--clear-groups",
                   *cmd]
        proc = subprocess.Popen(cmd, env=clean_env(env), stderr=subprocess.PIPE, text=True)
        lines = []
        try:
            for line in proc.stderr:
                lines.append(line)
                if "/metrics" in line or "error" in line:
                    break
            if any("Permission denied" in l for l in lines):
                pytest.skip("the joules binary is not reachable by an unprivileged user here")
            address = ADDRESS.search(lines[-1]).group(1)
            with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as r:
                m = parse(r.read().decode())
        finally:
            proc.kill()
            proc.communicate()
        note = [l for l in lines if l.startswith("joules: note: CPU energy is not measured")]
        assert len(note) == 1, lines
        assert "readable by root only" in note[0]
        assert f"sudo chmod a+r {root}/intel-rapl:*/energy_uj" in note[0]
        assert one(m, "joules_component_status", component="cpu", status="unreadable") == 1
        assert one(m, "joules_component_status", component="gpu", status="measured") == 1
    finally:
        shutil.rmtree(base, ignore_errors=True)
