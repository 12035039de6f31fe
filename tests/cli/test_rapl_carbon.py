"""CPU and DRAM through RAPL (fixture powercap trees), the CPU estimate, and carbon and cost in
every output of `joules run` and `joules wrap`.  Energies of fixture counters are exact: the
command itself rewrites the counters while joules runs, so every change falls inside the run."""
import json
import os
import pathlib
import shutil
import stat
import subprocess
import tempfile

import pytest

from conftest import EDGE_SLACK, JOULES, ROOT, joules, records_of

FIXTURES = ROOT / "tests" / "fixtures" / "powercap"
# max_energy_range_uj as real kernels report it (tests/fixtures/powercap/README.md).
INTEL_RANGE = 262143328850
AMD_RANGE = 65532610987
SIM1 = ["--backend", "sim", "--sim-gpus", "1", "--sim-profile", "0.5"]  # 70 + 315 W
OWID_ATTRIBUTION = ("Ember (2025); Energy Institute - Statistical Review of World Energy (2025) - "
                    "with major processing by Our World in Data")


def tree(tmp, name):
    dst = tmp / name
    shutil.copytree(FIXTURES / name, dst)
    return dst


def counter(root, zone):
    return int((root / zone / "energy_uj").read_text())


def set_script(root, steps):
    """A shell command that sets counters step by step: [(delay_s, {zone: value})...].  Files are
    replaced with a rename, so joules never reads a half-written one."""
    parts = []
    for delay, values in steps:
        parts.append(f"sleep {delay}")
        for zone, value in values.items():
            f = root / zone / "energy_uj"
            parts.append(f"printf '%s\\n' {value} > {f}.new && mv {f}.new {f}")
    parts.append("sleep 0.3")
    return " && ".join(parts)


def run(root, *args, script="sleep 0.3", env=None, cmd="run"):
    e = {"JOULES_POWERCAP_ROOT": str(root)}
    e.update(env or {})
    r = joules(cmd, "--json", *args, "--", "sh", "-c", script, env=e)
    recs = [json.loads(line) for line in r.stderr.splitlines() if line.startswith("{")]
    notes = [line for line in r.stderr.splitlines() if not line.startswith("{")]
    return r, recs, notes


def by_uuid(end):
    return {d["uuid"]: d for d in end["devices"]}


def test_intel_two_sockets_with_dram_exact_per_domain(tmp):
    root = tree(tmp, "intel-2s-dram")
    start = {z: counter(root, z) for z in ("intel-rapl:0", "intel-rapl:0:0", "intel-rapl:1", "intel-rapl:1:0")}
    add = {"intel-rapl:0": 12_345_678, "intel-rapl:0:0": 2_000_001, "intel-rapl:1": 23_456_789,
           "intel-rapl:1:0": 3_000_003}
    script = set_script(root, [(0.3, {z: start[z] + add[z] // 2 for z in add}),
                               (0.3, {z: start[z] + add[z] for z in add})])
    r, recs, notes = run(root, *SIM1, script=script)
    assert r.returncode == 0, r.stderr
    assert notes == []
    begin, end = records_of(r.stderr, "session_start")[0], records_of(r.stderr, "session_end")[0]
    kinds = [(d["kind"], d["uuid"]) for d in begin["devices"]]
    assert kinds[0][0] == "gpu"
    assert kinds[1:] == [("cpu", "intel-rapl:0"), ("cpu", "intel-rapl:1"), ("dram", "intel-rapl:0:0"),
                         ("dram", "intel-rapl:1:0")]
    assert [c["measured"] for c in begin["components"]] == [True, True]
    devices = by_uuid(end)
    for zone, uj in add.items():
        assert round(devices[zone]["energy_j"] * 1e6) == uj, zone
        assert devices[zone]["method"] == "counter"
    comps = end["components"]
    assert round(comps["cpu"]["energy_j"] * 1e6) == add["intel-rapl:0"] + add["intel-rapl:1"]
    assert round(comps["dram"]["energy_j"] * 1e6) == add["intel-rapl:0:0"] + add["intel-rapl:1:0"]
    # GPU energy is untouched by RAPL, and the node total is the sum of the parts.
    assert comps["gpu"]["energy_j"] == pytest.approx(385.0 * end["duration_s"], rel=1e-4)
    total = comps["gpu"]["energy_j"] + comps["cpu"]["energy_j"] + comps["dram"]["energy_j"]
    assert end["energy_j"] == pytest.approx(total, abs=1e-6)
    assert end["status"] == "completed" and end["method"] == "mixed"  # simulated + counter
    assert end["estimated_energy_j"] == 0


def test_summary_line_lists_each_component(tmp):
    root = tree(tmp, "intel-2s-dram")
    script = set_script(root, [(0.2, {"intel-rapl:0": counter(root, "intel-rapl:0") + 5_000_000})])
    r = joules("run", *SIM1, "--", "sh", "-c", script, env={"JOULES_POWERCAP_ROOT": str(root)})
    line = r.stderr.strip().splitlines()[-1]
    assert "; GPU " in line and "(NVIDIA H100 80GB HBM3, simulated)" in line, line
    assert " W of GPUs; GPU " in line  # RAPL has no power readings: the peak is the GPUs'
    assert " + CPU 5.00 J (" in line and "counter)" in line and " + DRAM 0 J (counter)" in line, line
    assert "not measured" not in line


def test_counter_wrap_during_the_run_is_exact_to_the_microjoule(tmp):
    root = tree(tmp, "amd-1p")
    near_top = AMD_RANGE - 4_000_000
    (root / "intel-rapl:0" / "energy_uj").write_text(f"{near_top}\n")
    script = set_script(root, [(0.3, {"intel-rapl:0": AMD_RANGE - 1_000}),
                               (0.3, {"intel-rapl:0": 2_500_017})])
    r, recs, _ = run(root, "--components", "cpu", script=script)
    assert r.returncode == 0, r.stderr
    end = records_of(r.stderr, "session_end")[0]
    cpu = by_uuid(end)["intel-rapl:0"]
    # One turn of the counter is max_energy_range_uj plus one energy unit (15 µJ on AMD Zen).
    expected_uj = (AMD_RANGE + 15 - near_top) + 2_500_017
    assert round(cpu["energy_j"] * 1e6) == expected_uj
    assert abs(cpu["energy_j"] * 1e6 - expected_uj) < 1e-3
    assert cpu["counter_wraps"] == 1 and cpu["counter_resets"] == 0
    assert end["status"] == "completed"
    # Without --components gpu no GPU backend is opened at all.
    assert [d["kind"] for d in end["devices"]] == ["cpu"]
    assert records_of(r.stderr, "session_start")[0]["scope"]["source"] == "--components"


def test_a_counter_reset_is_not_taken_for_a_wrap(tmp):
    root = tree(tmp, "amd-1p")
    (root / "intel-rapl:0" / "energy_uj").write_text("30000000000\n")  # mid-range
    script = set_script(root, [(0.3, {"intel-rapl:0": 1_000})])  # "echo 0 > energy_uj", then 1 mJ
    r, _, _ = run(root, "--components", "cpu", script=script)
    end = records_of(r.stderr, "session_end")[0]
    cpu = by_uuid(end)["intel-rapl:0"]
    assert cpu["counter_resets"] == 1 and cpu["counter_wraps"] == 0
    assert cpu["energy_j"] < 1.0  # not the 35 kJ a wrap would have claimed
    assert end["status"] == "measurement_degraded"


def test_psys_is_not_added_to_the_package(tmp):
    root = tree(tmp, "laptop-psys")
    script = set_script(root, [(0.3, {"intel-rapl:0": counter(root, "intel-rapl:0") + 7_000_000,
                                      "intel-rapl:0:0": counter(root, "intel-rapl:0:0") + 5_000_000,
                                      "intel-rapl:0:2": counter(root, "intel-rapl:0:2") + 1_000_000,
                                      "intel-rapl:1": counter(root, "intel-rapl:1") + 20_000_000})])
    r, _, _ = run(root, "--components", "cpu,dram", script=script)
    end = records_of(r.stderr, "session_end")[0]
    assert sorted(by_uuid(end)) == ["intel-rapl:0", "intel-rapl:0:2"]
    assert round(end["energy_j"] * 1e6) == 8_000_000


def test_dram_is_not_added_to_psys(tmp):
    # psys covers the whole SoC, memory included: with psys as the CPU the DRAM zone is in it.
    root = tree(tmp, "psys-dram")
    script = set_script(root, [(0.3, {"intel-rapl:0": counter(root, "intel-rapl:0") + 9_000_003,
                                      "intel-rapl:0:0": counter(root, "intel-rapl:0:0") + 1_500_001})])
    r, recs, notes = run(root, *SIM1, script=script)
    assert r.returncode == 0, r.stderr
    begin, end = recs
    assert [d["uuid"] for d in end["devices"] if d["kind"] != "gpu"] == ["intel-rapl:0"]
    assert round(end["components"]["cpu"]["energy_j"] * 1e6) == 9_000_003
    dram = [c for c in begin["components"] if c["kind"] == "dram"][0]
    assert not dram["measured"] and dram["detail"].startswith("counted in the CPU's intel-rapl:0 psys")
    # Alone, the DRAM zone is measured; named with the CPU it cannot be told apart.
    alone = tmp / "alone"
    alone.mkdir()
    root = tree(alone, "psys-dram")
    script = set_script(root, [(0.3, {"intel-rapl:0:0": counter(root, "intel-rapl:0:0") + 1_500_001})])
    r, recs, _ = run(root, "--components", "dram", script=script)
    assert r.returncode == 0, r.stderr
    end = records_of(r.stderr, "session_end")[0]
    assert [d["uuid"] for d in end["devices"]] == ["intel-rapl:0:0"]
    assert round(end["energy_j"] * 1e6) == 1_500_001
    r, _, _ = run(root, "--components", "cpu,dram")
    assert r.returncode == 125 and "--components dram: DRAM energy cannot be measured: counted in" in r.stderr


def test_no_powercap_gpu_totals_unchanged_and_said_once(tmp):
    r, recs, notes = run(tmp / "none", *SIM1)
    assert r.returncode == 0 and notes == []
    begin, end = recs
    assert [d["kind"] for d in end["devices"]] == ["gpu"]
    assert end["energy_j"] == pytest.approx(385.0 * end["duration_s"], rel=1e-4)
    assert all(not c["measured"] and "a VM, or a container" in c["detail"] for c in begin["components"])
    r = joules("run", *SIM1, "--", "true", env={"JOULES_POWERCAP_ROOT": str(tmp / "none")})
    line = r.stderr.strip().splitlines()[-1]
    assert line.count("not measured") == 1 and "CPU, DRAM not measured: no " in line, line
    r = joules("run", *SIM1, "--components", "gpu,cpu", "--", "true",
               env={"JOULES_POWERCAP_ROOT": str(tmp / "none")})
    assert r.returncode == 125 and "--components cpu: CPU energy cannot be measured" in r.stderr


def unreadable_run(root, *args):
    """Runs joules as a user who cannot read mode-000 files (nobody, when the tests run as root)."""
    env = dict(os.environ, JOULES_POWERCAP_ROOT=str(root))
    cmd = [JOULES, "run", *args, "--", "true"]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if not setpriv:
            pytest.skip("running as root without setpriv: mode-000 files stay readable")
        cmd = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", *cmd]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)


def test_unreadable_counters_are_told_apart_and_the_fix_printed():
    base = pathlib.Path(tempfile.mkdtemp(prefix="joules-rapl-"))
    try:
        os.chmod(base, 0o755)
        root = base / "amd-1p"
        shutil.copytree(FIXTURES / "amd-1p", root)
        for p in [root, *root.rglob("*")]:
            os.chmod(p, 0o755 if p.is_dir() else 0o644)
        os.chmod(root / "intel-rapl:0" / "energy_uj", 0)
        r = unreadable_run(root, *SIM1)
        if r.returncode != 0 and "Permission denied" in r.stderr:
            pytest.skip("the joules binary is not reachable by an unprivileged user here")
        assert r.returncode == 0, r.stderr
        lines = r.stderr.strip().splitlines()
        note = [l for l in lines if l.startswith("joules: note: CPU energy is not measured")]
        assert len(note) == 1, r.stderr
        assert "readable by root only" in note[0] and f"sudo chmod a+r {root}/intel-rapl:*/energy_uj" in note[0]
        assert "sudo udevadm control --reload && sudo udevadm trigger --action=add --subsystem-match=powercap" in note[0]
        assert "ACTION==\"add\"" in note[0]
        assert "CPU not measured: " in lines[-1] and "readable by root only" in lines[-1]
        r = unreadable_run(root, *SIM1, "--components", "gpu,cpu")
        assert r.returncode == 125 and "sudo chmod a+r" in r.stderr and len(r.stderr.splitlines()) == 1
    finally:
        shutil.rmtree(base, ignore_errors=True)


def proc_tree(tmp, model, stat_line):
    p = tmp / "proc"
    p.mkdir()
    (p / "cpuinfo").write_text(f"processor\t: 0\nmodel name\t: {model}\nphysical id\t: 0\nflags\t\t: fpu sse\n\n"
                               f"processor\t: 1\nmodel name\t: {model}\nphysical id\t: 1\nflags\t\t: fpu sse\n")
    (p / "stat").write_text(stat_line + "\nintr 0\n")
    return p


@pytest.mark.timing
def test_cpu_estimate_is_labelled_and_never_silently_mixed(tmp):
    # A static /proc/stat: utilisation since boot 25 % -> 150 W x 2 sockets x (0.1 + 0.9 x 0.25).
    proc = proc_tree(tmp, "Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz", "cpu  200 0 50 750 0 0 0 0 0 0")
    r, recs, notes = run(tmp / "none", *SIM1, "--estimate-cpu", env={"JOULES_PROC_ROOT": str(proc)})
    assert r.returncode == 0, r.stderr
    begin, end = recs
    cpu = [d for d in end["devices"] if d["kind"] == "cpu"][0]
    assert cpu["method"] == "estimated" and cpu["uuid"] == "cpu-estimate"
    assert "Intel Xeon Gold 6248, TDP 150 W from data/cpu_tdp.csv" in cpu["name"]
    watts = 300.0 * (0.1 + 0.9 * 0.25)
    assert cpu["energy_j"] == pytest.approx(watts * end["duration_s"], rel=1e-3 * EDGE_SLACK)
    assert end["estimated_energy_j"] == cpu["energy_j"]
    assert end["method"] == "mixed" and end["components"]["cpu"]["method"] == "estimated"
    comp = [c for c in begin["components"] if c["kind"] == "cpu"][0]
    assert comp["method"] == "estimated" and "RAPL: no " in comp["detail"]
    # An unknown model is not guessed.
    proc2 = proc_tree(tmp / "x" if (tmp / "x").mkdir() is None else tmp, "AMD EPYC", "cpu 1 0 1 8 0 0 0 0")
    r = joules("run", *SIM1, "--estimate-cpu", "--", "true",
               env={"JOULES_POWERCAP_ROOT": str(tmp / "none"), "JOULES_PROC_ROOT": str(proc2)})
    assert r.returncode == 125 and "'AMD EPYC' is not in joules' TDP table" in r.stderr
    r = joules("run", *SIM1, "--estimate-cpu", "--cpu-tdp", "100", "-q", "--", "true",
               env={"JOULES_POWERCAP_ROOT": str(tmp / "none"), "JOULES_PROC_ROOT": str(proc2)})
    assert r.returncode == 0, r.stderr


def test_carbon_pue_and_price_flow_into_every_output(tmp):
    out = tmp / "run.jsonl"
    r = joules("run", *SIM1, "--region", "DE", "--pue", "1.5", "--price-per-kwh", "0.3", "--currency", "EUR",
               "--output", out, "--", "sleep", "0.3")
    assert r.returncode == 0, r.stderr
    begin, end = (r for r in map(json.loads, out.read_text().splitlines()) if r["type"] != "sample")
    f = begin["carbon"]
    assert f["pue"] == 1.5 and f["region"] == "DE" and f["price"] == {"per_kwh": 0.3, "currency": "EUR",
                                                                     "source": "--price-per-kwh"}
    assert f["intensity"]["g_per_kwh"] == 344.1 and f["intensity"]["year"] == 2024
    assert f["intensity"]["licence"] == "CC BY 4.0" and "Our World in Data" in f["intensity"]["source"]
    assert f["intensity"]["attribution"] == OWID_ATTRIBUTION
    c = end["carbon"]
    kwh = end["energy_j"] / 3.6e6
    assert c["energy_kwh"] == pytest.approx(kwh, rel=1e-12)
    assert c["facility_energy_kwh"] == pytest.approx(1.5 * kwh, rel=1e-12)
    assert c["co2e_g"] == pytest.approx(1.5 * kwh * 344.1, rel=1e-12)
    assert c["co2e"] == {**c["co2e"], "region": "DE", "year": 2024, "method": "country_average",
                         "attribution": OWID_ATTRIBUTION}
    assert c["cost"] == pytest.approx(1.5 * kwh * 0.3, rel=1e-12)
    assert c["cost_basis"]["currency"] == "EUR" and c["cost_basis"]["method"] == "user_price"
    assert c["equivalent"]["car_km"] == pytest.approx(c["co2e_g"] / 106.8, rel=1e-12)
    line = r.stderr.strip().splitlines()[-1]
    assert " kWh x PUE 1.5 = " in line and "g CO2e (DE, 344 g/kWh, Ember and Energy Institute" in line
    assert " EUR, like driving " in line and line.endswith(" by car"), line


def test_region_from_the_environment_and_cloud_regions():
    r = joules("run", *SIM1, "--json", "--", "true", env={"JOULES_REGION": "aws:us-east-1"})
    end = records_of(r.stderr, "session_end")[0]
    assert end["carbon"]["co2e"]["method"] == "cloud_region_location"
    assert "US-VA" in end["carbon"]["co2e"]["source"]
    r = joules("run", *SIM1, "--json", "--region", "gcp:europe-west4", "--", "true",
               env={"JOULES_REGION": "FR"})  # the option wins
    co2e = records_of(r.stderr, "session_end")[0]["carbon"]["co2e"]
    assert co2e["intensity_g_per_kwh"] == 236 and co2e["year"] == 2023  # Google's 2023 figures


def test_an_alpha3_code_is_the_alpha2_code_in_every_output(tmp):
    out = tmp / "run.jsonl"
    r = joules("run", *SIM1, "--region", "deu", "--output", out, "--", "true")
    assert r.returncode == 0, r.stderr
    begin, end = (r for r in map(json.loads, out.read_text().splitlines()) if r["type"] != "sample")
    assert begin["carbon"]["region"] == "DE" and begin["carbon"]["intensity"]["region"] == "DE"
    assert end["carbon"]["co2e"]["region"] == "DE"
    assert "g CO2e (DE, 344 g/kWh" in r.stderr.strip().splitlines()[-1]


def test_an_unknown_region_from_the_environment_stops_before_anything_starts(tmp):
    marker = tmp / "ran"
    r = joules("run", *SIM1, "--", "touch", marker, env={"JOULES_REGION": "UK"})
    assert r.returncode == 2 and not marker.exists()
    assert r.stderr == ("joules: error: JOULES_REGION 'UK' (from the environment) is not in joules' tables; "
                        "did you mean GB (United Kingdom)? (docs/carbon.md says which regions they hold; --carbon-intensity G "
                        "gives the figure for any region)\n")
    # With --carbon-intensity the region is only a label.
    r = joules("run", *SIM1, "--json", "--carbon-intensity", "100", "--", "true", env={"JOULES_REGION": "UK"})
    assert r.returncode == 0, r.stderr
    assert records_of(r.stderr, "session_end")[0]["carbon"]["co2e"]["region"] == "UK"


def test_no_region_means_energy_only_said_once():
    r = joules("run", *SIM1, "--", "true")
    assert r.returncode == 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].count("CO2e") == 1
    assert "; no CO2e: no region given (--region, JOULES_REGION) and no --carbon-intensity" in lines[0]
    r = joules("run", *SIM1, "--json", "--", "true")
    end = records_of(r.stderr, "session_end")[0]
    assert end["carbon"]["co2e_g"] is None and "no region given" in end["carbon"]["note"]


@pytest.mark.parametrize("args,fragment", [
    (["--region", "Germany"], "--region 'Germany': expected an ISO country code"),
    (["--region", "UK"], "--region 'UK' is not in joules' tables; did you mean GB (United Kingdom)?"),
    (["--region", "gcp:europe-west99"], "not in joules' tables; did you mean gcp:europe-west9 (Paris, FR), "),
    (["--region"], "--region needs a value (REGION) before '--'"),
    (["--output"], "--output needs a value (FILE) before '--'"),
    (["--region", "--pue", "1.2"], "--region needs a value (REGION), not the option '--pue'"),
    (["--carbon-intensity", "1e9"], "--carbon-intensity '1e9': expected grams"),
    (["--price-per-kwh", "2e3"], "--price-per-kwh '2e3': expected a price"),
    (["--pue", "0.8"], "--pue '0.8': expected a power usage effectiveness from 1.0 to 5.0"),
    (["--carbon-intensity", "lots"], "--carbon-intensity 'lots': expected grams"),
    (["--price-per-kwh", "0.2", "--currency", "eur"], "--currency 'eur': expected a three-letter"),
    (["--currency", "EUR"], "--currency applies only with --price-per-kwh"),
    (["--components", "gpu,tpu"], "--components 'gpu,tpu': expected"),
    (["--cpu-tdp", "100"], "--cpu-tdp applies only with --estimate-cpu"),
])
def test_bad_values_exit_2_before_anything_starts(tmp, args, fragment):
    marker = tmp / "ran"
    r = joules("run", *SIM1, *args, "--", "touch", marker)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("joules: error: ") and fragment in r.stderr and len(r.stderr.splitlines()) == 1
    assert not marker.exists()


def test_wrap_reports_components_and_carbon(tmp):
    root = tree(tmp, "intel-2s-dram")
    out = tmp / "wrap.jsonl"
    script = ("for i in 1 2 3 4; do echo \"step $i/4 loss 1.0\"; sleep 0.1; done; " +
              set_script(root, [(0.05, {"intel-rapl:0": counter(root, "intel-rapl:0") + 1_000_000})]))
    r = joules("wrap", *SIM1, "-q", "--no-inline", "--region", "FR", "--output", out, "--", "sh", "-c", script,
               env={"JOULES_POWERCAP_ROOT": str(root)})
    assert r.returncode == 0, r.stderr
    recs = [json.loads(l) for l in out.read_text().splitlines()]
    end = [x for x in recs if x["type"] == "session_end"][0]
    assert round(end["components"]["cpu"]["energy_j"] * 1e6) == 1_000_000
    assert end["carbon"]["co2e_g"] == pytest.approx(end["energy_j"] / 3.6e6 * 44.2, rel=1e-12)
