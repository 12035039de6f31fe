"""`joules doctor` against the fake libnvidia-ml.so.1: one scenario per health condition, its
finding, severity and exit status (0 healthy, 1 warnings, 2 unhealthy), an old driver, no
driver, and the CUDA-to-NVML mapping."""
import json
import os
import re
import shutil
import subprocess
import time

import pytest

import schema_check
from conftest import JOULES, ROOT, fake_gpus, joules, words

NO_RAPL = {"JOULES_POWERCAP_ROOT": "/nonexistent-powercap"}  # the host's RAPL stays out of it


def doctor(scenario, *args, variant="full", env=None):
    e, _ = fake_gpus(scenario, variant)
    e.update(NO_RAPL)
    e.update(env or {})
    return joules("doctor", *args, env=e)


def doctor_json(scenario, *args, **kw):
    r = doctor(scenario, "--json", *args, **kw)
    lines = r.stdout.splitlines()
    assert len(lines) == 1, r.stdout + r.stderr
    rep = json.loads(lines[0])
    schema_check.validate(rep)  # docs/schema/doctor.json
    return r, rep


def h100(**health):
    return {"name": "NVIDIA H100 80GB HBM3", "architecture": "hopper", "latency_us": 20,
            "health": health}


def codes(report, level=None):
    return [f["code"] for f in report["findings"] if level is None or f["severity"] == level]


def test_a_healthy_machine_exits_0_and_says_what_it_can_measure():
    r, rep = doctor_json({"devices": [h100(), h100()]})
    assert r.returncode == 0, r.stdout
    assert rep["type"] == "doctor" and rep["status"] == "healthy" and rep["exit_status"] == 0
    assert codes(rep, "warning") == [] and codes(rep, "critical") == []
    assert rep["backend"]["ok"] and rep["backend"]["driver_version"] == "570.86.15"
    assert rep["backend"]["library_path"].endswith("full/libnvidia-ml.so.1")
    assert rep["backend"]["symbols_found"] == rep["backend"]["symbols_known"] > 50
    g = rep["gpus"][0]
    assert g["energy_counter"] and g["method"] == "counter" and g["power_source"] == "instant"
    assert g["gpm"] is True and "gpm" in g["health_readings"]
    assert g["power_limit_control"] is True and g["power_limit_permission"] is True
    assert g["power_w"] == 100 and g["power_limit_w"] == 700
    assert g["compute_capability"] == "9.0"
    for reading in ("utilization", "memory", "temperature", "clocks", "clock_events", "ecc_errors",
                    "remapped_rows", "pcie_link", "persistence_mode", "processes"):
        assert reading in g["health_readings"], reading


def test_every_nvml_call_is_made_on_one_thread(tmp):
    calls = tmp / "calls.jsonl"
    r, rep = doctor_json({"devices": [h100(), h100()]}, env={"FAKE_NVML_CALL_LOG": str(calls)})
    assert r.returncode == 0
    log = json.loads(calls.read_text().splitlines()[-1])
    assert log["device_call_threads"] == 1
    # Every health reading was asked for (ECC counts and remapped rows among the field values);
    # nothing was set: doctor only reads.
    for fn in ("nvmlDeviceGetFieldValues", "nvmlDeviceGetPersistenceMode",
               "nvmlGpmQueryDeviceSupport", "nvmlDeviceGetPowerManagementLimit",
               "nvmlDeviceGetRunningProcessDetailList"):
        assert log["calls"].get(fn, 0) >= 2, fn
    # (An event set is not a setting: it only receives the XIDs, docs/xid.md.)
    assert not [fn for fn in log["calls"] if "Set" in fn and not fn.startswith("nvmlEventSet")], \
        log["calls"]
    assert log["calls"].get("nvmlEventSetWait_v2", 0) >= 2
    assert "ecc_errors" in rep["gpus"][1]["health_readings"]


def test_health_fields_a_driver_lacks_come_from_their_getters(tmp):
    # One GPU whose driver answers the health fields NOT_SUPPORTED: probed once, then the
    # getters read the same conditions, and the findings are those of a driver that has them.
    bad = {"ecc_uncorrected": 3, "ecc_corrected": 5, "remap_failure": True,
           "pcie_replay_counter": 4, "retirement_pending": True}
    lacking = h100(**bad)
    lacking["fields_not_supported"] = [3, 4, 5, 6, 29, 30, 31, 94, 142, 143, 144, 145, 190]
    calls = tmp / "calls.jsonl"
    r, rep = doctor_json({"devices": [h100(**bad), lacking]},
                         env={"FAKE_NVML_CALL_LOG": str(calls)})
    assert r.returncode == 2
    by_gpu = [sorted((f["severity"], f["code"]) for f in rep["findings"] if f.get("gpu") == i)
              for i in (0, 1)]
    assert by_gpu[0] == by_gpu[1] and ("critical", "ecc_uncorrectable") in by_gpu[0], by_gpu
    assert rep["gpus"][0]["health_readings"] == rep["gpus"][1]["health_readings"]
    calls = json.loads(calls.read_text().splitlines()[-1])["calls"]
    # Only the GPU that lacks the fields asks the getters: 4 ECC counters, remapped rows, ...
    assert calls["nvmlDeviceGetTotalEccErrors"] == 4
    for fn in ("nvmlDeviceGetRemappedRows", "nvmlDeviceGetPcieReplayCounter",
               "nvmlDeviceGetRetiredPagesPendingStatus"):
        assert calls[fn] == 1, fn


def test_the_text_report_has_every_section_and_fixes():
    r = doctor({"devices": [h100(ecc_uncorrected=3)]})
    assert r.returncode == 2
    out = r.stdout
    for part in ("NVML", "library", "driver 570.86.15", "GPU 0  NVIDIA H100 80GB HBM3 (hopper)",
                 "energy      from its energy counter · power instantaneous", "GPM yes", "this process may change it: yes", "CUDA devices",
                 "cuda:0 = GPU 0", "Findings", "critical  GPU 0: 3 uncorrectable ECC errors",
                 "fix: drain the node", "Status: unhealthy (exit 2)"):
        assert part in out, (part, out)
    assert r.stderr == ""
    assert "counter · counter" not in out


CONDITIONS = [
    # (device, expected code, severity, exit status)
    (h100(ecc_uncorrected=2), "ecc_uncorrectable", "critical", 2),
    (h100(ecc_uncorrected_aggregate=5), "ecc_uncorrectable_lifetime", "warning", 1),
    ({"architecture": "volta", "name": "Tesla V100-SXM2-32GB", "health": {"retirement_pending": True,
                                                                       "retired_pages": 3}},
     "retirement_pending", "critical", 2),
    ({"architecture": "ampere", "name": "NVIDIA A100-SXM4-80GB", "health": {"remap_pending": True}},
     "remap_pending", "critical", 2),
    (h100(remap_failure=True, remapped_rows_uncorrected=4), "remap_failure", "critical", 2),
    (h100(clocks_event_reasons=0x40), "hw_thermal_slowdown", "critical", 2),
    (h100(clocks_event_reasons=0x8), "hw_slowdown", "critical", 2),
    (h100(clocks_event_reasons=0x80), "hw_power_brake", "critical", 2),
    (h100(clocks_event_reasons=0x20), "sw_thermal_slowdown", "warning", 1),
    (h100(pcie_width=8), "pcie_width_degraded", "warning", 1),
    (h100(pcie_generation=3, gpu_util_percent=90), "pcie_generation_degraded", "warning", 1),
    (h100(persistence_mode=False), "persistence_off", "warning", 1),
    (dict(h100(), limits={"current_w": 500}), "power_limit_below_default", "warning", 1),
    (h100(temperature_c=91), "temperature_high", "warning", 1),
    (h100(nvlink_links=18, nvlink_links_down=[5]), "nvlink_down", "warning", 1),
]


@pytest.mark.parametrize("device,code,severity,status", CONDITIONS, ids=[c[1] for c in CONDITIONS])
def test_each_health_condition_gives_its_finding_and_exit_status(device, code, severity, status):
    r, rep = doctor_json({"devices": [h100(), device]})
    assert r.returncode == status, rep["findings"]
    assert rep["exit_status"] == status
    found = [f for f in rep["findings"] if f["code"] == code]
    assert len(found) == 1, rep["findings"]
    f = found[0]
    assert f["severity"] == severity and f["gpu"] == 1
    assert f["message"].startswith("GPU 1: ") and f["fix"]
    # GPU 0 is healthy: nothing is said about it.
    assert not [f for f in rep["findings"] if f["gpu"] == 0 and f["severity"] != "info"]
    # The most severe finding comes first.
    order = {"critical": 0, "warning": 1, "info": 2}
    assert [order[x["severity"]] for x in rep["findings"]] == sorted(order[x["severity"]]
                                                                    for x in rep["findings"])


def test_information_alone_keeps_the_machine_healthy():
    idle_link = h100(pcie_generation=1, gpu_util_percent=0, clocks_event_reasons=0x1)
    old_errors = h100(ecc_corrected=7, pcie_replay_counter=2, nvlink_links=4,
                      nvlink_replay_errors=4)
    r, rep = doctor_json({"devices": [idle_link, old_errors]})
    assert r.returncode == 0, rep["findings"]
    assert {"pcie_generation_idle", "ecc_corrected", "pcie_replays",
            "nvlink_errors"} <= set(codes(rep, "info"))


def has_cap_sys_admin():
    status = open("/proc/self/status").read()
    cap_eff = next(line for line in status.splitlines() if line.startswith("CapEff:"))
    return bool(int(cap_eff.split()[1], 16) >> 21 & 1)


def test_power_limit_permission_is_the_process_capability_and_gpus_that_cannot_be_opened():
    # Whether this process may change a limit is CAP_SYS_ADMIN, read from /proc/self/status,
    # never learnt by setting one.  Without it (setpriv drops it), the finding says what is needed.
    scenario = {"devices": [h100(), dict(h100(), permission="no_permission")]}
    r, rep = doctor_json(scenario)
    g = rep["gpus"][0]
    assert g["power_limit_control"] is True
    assert g["power_limit_permission"] is has_cap_sys_admin()
    assert g["power_limit_permission_detail"].startswith("yes" if has_cap_sys_admin() else "no")
    assert "gpu_skipped" in codes(rep, "warning")
    assert any("no permission" in n for n in rep["notices"])
    if not shutil.which("setpriv"):
        pytest.skip("setpriv (util-linux) is needed to drop CAP_SYS_ADMIN")
    e, _ = fake_gpus(scenario)
    e.update(NO_RAPL)
    dropped = subprocess.run(["setpriv", "--bounding-set", "-sys_admin", JOULES, "doctor", "--json"],
                             env={**os.environ, **e}, capture_output=True, text=True, timeout=60)
    rep = json.loads(dropped.stdout)
    g = rep["gpus"][0]
    assert g["power_limit_permission"] is False
    assert g["power_limit_permission_detail"].startswith("no"), g
    f = next(f for f in rep["findings"] if f["code"] == "power_limit_no_permission")
    assert f["severity"] == "info" and "CAP_SYS_ADMIN" in f["fix"] and "joules tune" in f["fix"]


def test_a_gpu_that_fell_off_the_bus_is_unhealthy():
    scenario = {"devices": [h100(), dict(h100(), faults=[{"at_s": 0, "kind": "lost"}])]}
    r, rep = doctor_json(scenario)
    assert r.returncode == 2, rep["findings"]
    lost = [f for f in rep["findings"] if f["code"] == "gpu_lost"]
    assert len(lost) == 1 and lost[0]["severity"] == "critical" and "GPU 1" in lost[0]["message"]
    # Listed, as lost: the driver lists it, though it fell off the bus before doctor started.
    assert [(g["index"], g["lost"]) for g in rep["gpus"]] == [(0, False), (1, True)]
    assert "gpu_skipped" not in codes(rep)
    # CUDA does not count it, and it has no name to be ordered by: not in the mapping.
    assert [d["nvml_index"] for d in rep["cuda"]["devices"]] == [0]
    assert "cuda_order_uncertain" not in codes(rep)


def test_a_gpu_whose_every_reading_fails_from_the_start_is_lost():
    # Its handle works, but energy and power answer an error from the first call on.
    scenario = {"devices": [h100(), dict(h100(), faults=[{"at_s": 0, "kind": "error",
                                                          "code": "UNKNOWN"}])]}
    r, rep = doctor_json(scenario)
    assert r.returncode == 2, rep["findings"]
    assert rep["status"] == "unhealthy"
    assert [(g["index"], g["lost"]) for g in rep["gpus"]] == [(0, False), (1, True)]
    lost = [f for f in rep["findings"] if f["code"] == "gpu_lost"]
    assert len(lost) == 1 and lost[0]["gpu"] == 1 and lost[0]["severity"] == "critical"
    assert "could not be read at start" in lost[0]["message"], lost[0]


def test_doctor_reads_the_limit_and_sets_nothing(tmp):
    # Even where the driver would refuse a change (settable false), doctor asks it nothing that
    # could change anything.
    calls = tmp / "calls.jsonl"
    scenario = {"devices": [dict(h100(), limits={"current_w": 650, "settable": False})]}
    for _ in range(2):
        r, rep = doctor_json(scenario, env={"FAKE_NVML_CALL_LOG": str(calls)})
        assert rep["gpus"][0]["power_limit_w"] == 650
    for line in calls.read_text().splitlines():
        called = json.loads(line)["calls"]
        # Event sets only receive XIDs (docs/xid.md): not a setting.
        assert not [fn for fn in called if "Set" in fn and not fn.startswith("nvmlEventSet")], line


def test_an_old_driver_missing_most_symbols():
    r, rep = doctor_json({"devices": [{"latency_us": 20}]}, variant="r390")
    assert r.returncode == 0, rep["findings"]  # no energy counter: a capability gap, information
    assert rep["backend"]["driver_version"] == "390.157"
    assert rep["backend"]["symbols_found"] < rep["backend"]["symbols_known"]
    g = rep["gpus"][0]
    assert g["energy_counter"] is False and g["method"] == "polled"
    assert g["power_source"] == "power_usage" and g["gpm"] is False
    assert g["architecture"] == "" and g["compute_capability"] is None
    assert g["mig_enabled"] is None
    # Field values and the remapper arrived later; what an R390 driver has still works.
    for absent in ("memory_temperature", "remapped_rows", "pcie_throughput", "gpm"):
        assert absent not in g["health_readings"]
    for present in ("utilization", "temperature", "clocks", "clock_events", "ecc_errors",
                    "pcie_link"):
        assert present in g["health_readings"]
    # What cannot be measured here is information, unless --fail-on names it.
    assert codes(rep, "warning") == [] and "no_energy_counter" in codes(rep, "info")
    # Its health findings work through the old calls too.
    r, rep = doctor_json({"devices": [{"health": {"ecc_uncorrected": 1}}]}, variant="r390")
    assert r.returncode == 2 and "ecc_uncorrectable" in codes(rep, "critical")


def test_r470_has_no_gpm_and_no_pcie_counters_but_the_rest():
    r, rep = doctor_json({"devices": [h100()]}, variant="r470")
    assert r.returncode == 0, rep["findings"]
    g = rep["gpus"][0]
    assert g["gpm"] is False and "gpm_unavailable" in codes(rep, "info")
    assert "remapped_rows" in g["health_readings"] and "memory_temperature" in g["health_readings"]


def test_no_driver_is_unhealthy_with_the_reason():
    r = joules("doctor", env={"JOULES_NVML_LIBRARY": "/nonexistent/libnvidia-ml.so.1", **NO_RAPL})
    assert r.returncode == 2
    assert "cannot load the NVIDIA management library /nonexistent/libnvidia-ml.so.1" in r.stdout
    assert "Status: unhealthy (exit 2)" in r.stdout
    r, rep = doctor_json({"init_error": "DRIVER_NOT_LOADED", "devices": [{}]})
    assert r.returncode == 2
    assert rep["backend"]["ok"] is False and "nvmlInit failed" in rep["backend"]["error"]
    assert codes(rep, "critical") == ["backend_unavailable"] and rep["gpus"] == []


def test_cuda_to_nvml_mapping():
    # NVML index 0 is on bus 0x3b and index 1 on bus 0x18: CUDA (by bus id) numbers them 1, 0.
    scenario = {"devices": [dict(h100(), pci_bus_id="00000000:3B:00.0"),
                            dict(h100(), pci_bus_id="00000000:18:00.0")]}
    r, rep = doctor_json(scenario, env={"CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
    assert r.returncode == 0
    assert [(d["cuda_index"], d["nvml_index"]) for d in rep["cuda"]["devices"]] == [(0, 1), (1, 0)]
    assert rep["cuda"]["device_order"] == "PCI_BUS_ID" and rep["cuda"]["certain"] is True
    assert {g["index"]: g["cuda_index"] for g in rep["gpus"]} == {0: 1, 1: 0}
    # By index, CUDA_VISIBLE_DEVICES=0 is a different GPU for CUDA than for nvidia-smi.
    r, rep = doctor_json(scenario, env={"CUDA_DEVICE_ORDER": "PCI_BUS_ID",
                                        "CUDA_VISIBLE_DEVICES": "0"})
    assert r.returncode == 1 and "cuda_visible_indices" in codes(rep, "warning")
    assert [(d["cuda_index"], d["nvml_index"]) for d in rep["cuda"]["devices"]] == [(0, 1)]
    # By UUID there is no doubt.
    uuid = rep["gpus"][0]["uuid"]
    r, rep = doctor_json(scenario, env={"CUDA_VISIBLE_DEVICES": uuid})
    assert r.returncode == 0, rep["findings"]
    assert rep["cuda"]["visible_devices"] == uuid
    assert [g["cuda_index"] for g in rep["gpus"]] == [0]
    # Mixed models with the default (fastest first) order: CUDA's numbering is a guess.
    mixed = {"devices": [h100(), {"architecture": "ampere", "name": "NVIDIA A100-SXM4-80GB"}]}
    r, rep = doctor_json(mixed)
    assert r.returncode == 1 and "cuda_order_uncertain" in codes(rep, "warning")
    assert rep["cuda"]["certain"] is False


def test_gpus_option_and_bad_options():
    r, rep = doctor_json({"devices": [h100(), h100(persistence_mode=False)]}, "--gpus", "0")
    assert r.returncode == 0 and [g["index"] for g in rep["gpus"]] == [0]
    # Bad options are joules' own errors: 3, apart from the node's 0, 1 and 2.
    r = doctor({"devices": [h100()]}, "--gpus", "5")
    assert r.returncode == 3 and r.stdout == "" and len(r.stderr.splitlines()) == 1
    assert "--gpus '5'" in r.stderr
    r = joules("doctor", "--frobnicate")
    assert r.returncode == 3 and "unknown option '--frobnicate' for joules doctor" in r.stderr


def test_rapl_section_shows_what_cpu_and_dram_measurement_needs(tmp):
    root = tmp / "powercap"
    shutil.copytree(ROOT / "tests" / "fixtures" / "powercap" / "intel-2s-dram", root)
    r, rep = doctor_json({"devices": [h100()]}, env={"JOULES_POWERCAP_ROOT": str(root)})
    assert r.returncode == 0, rep["findings"]
    kinds = {c["kind"]: c["method"] for c in rep["components"]}
    assert kinds == {"cpu": "counter", "dram": "counter"}
    r = doctor({"devices": [h100()]}, env={"JOULES_POWERCAP_ROOT": str(root)})
    assert "CPU and DRAM (RAPL)" in r.stdout


def test_sim_backend_and_help():
    r = joules("doctor", "--backend", "sim", "--sim-gpus", "2", "--json", env=NO_RAPL)
    rep = json.loads(r.stdout)
    assert r.returncode == 0 and "simulated" in codes(rep, "info")
    assert [g["method"] for g in rep["gpus"]] == ["simulated", "simulated"]
    h = joules("doctor", "--help")
    assert h.returncode == 0
    for part in ("Exit status: 0 healthy, 1 warnings, 2 unhealthy", "--json", "--gpus LIST",
                 "--backend NAME", "CUDA_DEVICE_ORDER", "doctor only reads",
                 "; the report says what cannot, and why"):
        assert part in words(h.stdout), part
    assert "summary" not in h.stdout


def test_doctor_is_quick_with_eight_gpus():
    # The issue's goal is 200 ms; the bound here leaves room for a loaded, sanitised test box.
    scenario = {"devices": [h100() for _ in range(8)]}
    e, _ = fake_gpus(scenario)
    e.update(NO_RAPL)
    t0 = time.monotonic()
    r = joules("doctor", "--json", env=e)
    elapsed = time.monotonic() - t0
    assert r.returncode == 0, r.stdout
    assert len(json.loads(r.stdout)["gpus"]) == 8
    assert elapsed < 2.0, elapsed


def test_rapl_zones_left_out_of_the_sum_are_shown_with_the_reason(tmp):
    root = tmp / "powercap"
    shutil.copytree(ROOT / "tests" / "fixtures" / "powercap" / "laptop-psys", root)
    r, rep = doctor_json({"devices": [h100()]}, env={"JOULES_POWERCAP_ROOT": str(root)})
    left = [z for c in rep["components"] for z in c["left_out"]]
    assert any(z.startswith("intel-rapl:1 (psys): the whole platform") for z in left), left
    assert any("(core): part of package" in z for z in left), left
    assert any("(uncore): part of package" in z for z in left), left
    assert any(z.startswith("intel-rapl-mmio:0: the MMIO interface") for z in left), left
    text = doctor({"devices": [h100()]}, env={"JOULES_POWERCAP_ROOT": str(root)}).stdout
    assert "left out  intel-rapl:1 (psys): the whole platform, which contains the packages" in text


def test_a_slow_driver_is_a_finding_and_doctor_stays_quick():
    # GPU 1 answers each NVML call after 200 ms: its 35 or so health and capability calls would
    # take doctor 7 s more; it reports the slow driver and skips them.
    scenario = {"devices": [h100(), dict(h100(), latency_us=200_000)]}
    t0 = time.monotonic()
    r, rep = doctor_json(scenario)
    elapsed = time.monotonic() - t0
    assert r.returncode == 1, rep["findings"]
    slow = [f for f in rep["findings"] if f["code"] == "slow_driver"]
    assert len(slow) == 1 and slow[0]["gpu"] == 1 and slow[0]["severity"] == "warning", slow
    # 200 ms of the fake's latency and what the machine adds (203 ms once under ASan, in CI).
    assert re.search(r"took 2\d\d ms", slow[0]["message"]), slow[0]["message"]
    assert "dmesg" in slow[0]["fix"]
    g0, g1 = rep["gpus"]
    assert g0["health_checked"] and not g1["health_checked"]
    assert g0["read_time_s"] < 0.010 <= g1["read_time_s"]
    # Opening NVML costs its calls at 200 ms (about 2 s); the examination adds two reads.
    assert elapsed < 5.0, elapsed
    text = doctor(scenario).stdout
    assert "health      not checked: the driver is too slow" in text, text


def test_the_default_power_limit_is_read_right():
    # The default limit is read after the maximum PCIe width into the same variable: a read of
    # the variable before the call would give 0.016 W.
    dev = dict(h100(), limits={"default_w": 650, "current_w": 600, "min_w": 200, "max_w": 700})
    r, rep = doctor_json({"devices": [dev]})
    f = [f for f in rep["findings"] if f["code"] == "power_limit_below_default"]
    assert len(f) == 1 and "600 W is below the default 650 W" in f[0]["message"], rep["findings"]


def test_capability_gaps_fail_only_when_named_and_known_issues_can_be_ignored():
    old = {"devices": [h100(persistence_mode=False)]}
    # r390: no energy counter (a capability gap: info) and persistence off (a warning).
    r, rep = doctor_json(old, variant="r390")
    assert r.returncode == 1 and codes(rep, "warning") == ["persistence_off"], rep["findings"]
    assert "no_energy_counter" in codes(rep, "info")
    assert rep["checks"] == {"fail_on": [], "ignore": []} and rep["ignored"] == []
    r, rep = doctor_json(old, "--fail-on", "no_energy_counter,gpm_unavailable", variant="r390")
    assert r.returncode == 2 and rep["status"] == "unhealthy", rep["findings"]
    assert codes(rep, "critical") == ["no_energy_counter"]
    assert rep["checks"]["fail_on"] == ["no_energy_counter", "gpm_unavailable"]
    r, rep = doctor_json(old, "--ignore", "persistence_off", variant="r390")
    assert r.returncode == 0 and rep["status"] == "healthy", rep["findings"]
    assert "persistence_off" not in codes(rep)
    assert [f["code"] for f in rep["ignored"]] == ["persistence_off"]
    assert rep["checks"]["ignore"] == ["persistence_off"]
    r = doctor(old, "--ignore", "persistence_off", variant="r390")
    assert r.returncode == 0 and "Ignored (--ignore)" in r.stdout, r.stdout
    # --ignore wins over --fail-on; a critical finding ignored no longer fails.
    sick = {"devices": [h100(ecc_uncorrected=2)]}
    r, rep = doctor_json(sick, "--fail-on", "ecc_uncorrectable", "--ignore", "ecc_uncorrectable")
    assert r.returncode == 0 and codes(rep, "critical") == [], rep["findings"]


def test_joules_own_errors_have_their_own_exit_status():
    # 0, 1 and 2 say how healthy the node is; a bad option is joules' error: 3.
    for args in (["--fail-on", "no_such_check"], ["--ignore", "gpu_lost,nope"], ["--frobnicate"],
                 ["--gpus"]):
        r = doctor({"devices": [h100()]}, *args)
        assert r.returncode == 3, (args, r.returncode, r.stderr)
        assert r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
    r = doctor({"devices": [h100()]}, "--fail-on", "no_such_chek")
    assert "'no_such_chek' is not a check" in r.stderr and "no_energy_counter" in r.stderr
    r = joules("doctor", "--help")
    assert r.returncode == 0
    text = words(r.stdout)
    for part in ("--fail-on", "--ignore", "3 for an error of joules' own", "1 warnings",
                 "2 unhealthy"):
        assert part in text, part


def test_every_check_in_the_docs_is_one_doctor_knows():
    # docs/monitor-doctor.md's table of findings and the codes --fail-on and --ignore take.
    doc = (ROOT / "docs" / "monitor-doctor.md").read_text()
    table = doc[doc.index("| code | severity | when |"):]
    table = table[:table.index("\n\n")]
    documented = set()
    for line in table.splitlines()[2:]:
        documented.update(c.strip("`") for c in line.split("|")[1].split(",") if c.strip())
    documented = {c.strip().strip("`") for c in documented}
    assert len(documented) > 30, documented
    r = doctor({"devices": [h100()]}, "--ignore", ",".join(sorted(documented)), "--json")
    assert r.returncode == 0, r.stderr
    r = doctor({"devices": [h100()]}, "--ignore", "not_a_documented_code")
    assert r.returncode == 3


def test_each_link_is_asked_for_its_errors_only_when_the_gpu_has_errors(tmp):
    # 18 links: four calls a link would be 72 per slow reading.  A GPU without errors is never
    # asked; one with errors is asked once per change of its totals, and the finding names the
    # link the errors are on.
    calls = tmp / "calls.jsonl"
    r, rep = doctor_json({"devices": [h100(nvlink_links=18)]},
                         env={"FAKE_NVML_CALL_LOG": str(calls)})
    (line,) = calls.read_text().splitlines()
    assert "nvmlDeviceGetNvLinkErrorCounter" not in json.loads(line)["calls"]
    calls.unlink()
    r, rep = doctor_json({"devices": [h100(nvlink_links=18, nvlink_replay_errors=5,
                                           nvlink_errors_link=7)]},
                         env={"FAKE_NVML_CALL_LOG": str(calls)})
    (line,) = calls.read_text().splitlines()
    assert json.loads(line)["calls"]["nvmlDeviceGetNvLinkErrorCounter"] == 4 * 18
    (finding,) = [f for f in rep["findings"] if f["code"] == "nvlink_errors"]
    assert "on link 7 (5)" in finding["message"], finding
