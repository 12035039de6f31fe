"""`joules run` against the fake AMD SMI and ROCm SMI (tests/fake_amdsmi): joules' real AMD code
path, held to exact truth as test_run_nvml.py holds NVIDIA's."""
import json

import pytest

from conftest import EDGE_SLACK, device_truth_j, fake_amd, fake_gpus, joules, truth_j
from vendor_run import assert_exact, assert_kept_until_lost, random_segments, run_records


def mi300(power, **extra):
    d = {"name": "AMD Instinct MI300X", "latency_us": 20, "power": power}
    d.update(extra)
    return d


def run_json(scenario, *args, rocm_smi=False, **kw):
    return run_records(*fake_amd(scenario, rocm_smi=rocm_smi), *args, **kw)


@pytest.mark.timing
@pytest.mark.parametrize("counter", [{"update_ms": 1}, {"update_ms": 100, "phase_ms": 37}])
def test_total_energy_from_the_accumulator_is_exact_to_a_tenth_of_a_percent(counter):
    # The accumulator counts 2^-16 J while the library reports 15.3 µJ (docs/amd-notes.md §3):
    # a joules that multiplied by the reported value would be 0.27 % high and fail here.
    scenario = {"devices": [mi300(random_segments(1, high=700), energy_counter=counter),
                            mi300({"type": "square", "low_w": 150, "high_w": 650, "period_s": 0.3},
                                  energy_counter=counter)]}
    # 10 s, as test_run_nvml.py's twin: the sampler's first reading after the run's end can come
    # late on a loaded machine, and over 6 s that did not always stay inside 0.1 %.
    r, records, epoch = run_json(scenario, cmd=("sleep", "10"))
    assert r.returncode == 0, r.stderr
    start, end = records
    assert start["backend"] == "amdsmi" and start["gpu_libraries"][0]["version"] == "24.7.0"
    assert [d["vendor"] for d in start["devices"]] == ["amd", "amd"]
    assert start["devices"][0]["power_source"] == "current_socket_power"
    assert end["method"] == "counter"
    assert_exact(scenario, records, epoch)


@pytest.mark.timing
def test_a_resolution_the_library_reports_exactly_is_taken_as_it_is():
    # A library that reports the counter's own unit: joules multiplies by it.
    counter = {"unit_uj": 15.625, "resolution_uj": 15.625}
    scenario = {"devices": [mi300({"type": "constant", "watts": 420}, energy_counter=counter)]}
    r, records, epoch = run_json(scenario)
    assert r.returncode == 0, r.stderr
    assert_exact(scenario, records, epoch)


@pytest.mark.timing
def test_the_64_bit_accumulator_wraps_and_is_counted_exactly():
    # 500 W is 500 x 65536 counts a second: 11 s of them short of 2^64 at scenario time 0, the
    # counter wraps 11 s later, a second into the run (which starts 10 s into scenario time).
    counts_per_s = 500 * 65536
    initial = 2**64 - int(11.0 * counts_per_s)
    scenario = {"devices": [mi300({"type": "constant", "watts": 500},
                                  energy_counter={"initial_counts": initial})]}
    r, records, epoch = run_json(scenario, cmd=("sleep", "2"))
    assert r.returncode == 0, r.stderr
    end = records[-1]
    assert end["devices"][0]["counter_wraps"] == 1
    assert end["devices"][0]["counter_resets"] == 0
    assert end["status"] == "completed" and not end["degraded"]
    assert_exact(scenario, records, epoch)


@pytest.mark.timing
def test_a_gpu_lost_mid_run_keeps_the_energy_known_until_then():
    scenario = {"devices": [mi300({"type": "constant", "watts": 300}),
                            mi300({"type": "constant", "watts": 400},
                                  faults=[{"at_s": 11.0, "kind": "lost"}])]}
    r, records, epoch = run_json(scenario, cmd=("sleep", "2"))
    assert r.returncode == 0
    end = records[-1]
    assert end["status"] == "measurement_degraded"
    lost = end["devices"][1]
    assert lost["lost_at_s"] == pytest.approx(11.0 - (end["start_monotonic_s"] - epoch / 1e9),
                                              abs=0.15)
    assert_kept_until_lost(lost, 400.0)
    assert end["devices"][0]["energy_j"] == pytest.approx(300.0 * end["duration_s"],
                                                          rel=1e-3 * EDGE_SLACK)
    assert any("AMD GPU 1 stopped reporting" in d for d in end["degradations"])


@pytest.mark.timing
@pytest.mark.parametrize("version,power", [("23.2.0", {"current": False, "average": True}),
                                           ("24.7.0", {"current": True}),
                                           ("24.7.0", {"current": False, "average": True}),
                                           ("26.1.0", {"current": True})])
def test_without_a_counter_power_is_integrated_in_every_layout_of_power_info(version, power):
    # A virtual machine's guest has no energy counter: power readings, whose struct changed its
    # layout three times (docs/amd-notes.md §3), are integrated.  A wrong offset reads a voltage
    # or a zero and lands far off.
    scenario = {"library_version": version,
                "devices": [mi300({"type": "linear", "points": [[0, 200], [12, 500], [20, 300]]},
                                  energy_counter={"supported": False}, socket_power=power)]}
    r, records, epoch = run_json(scenario, cmd=("sleep", "2"))
    assert r.returncode == 0, r.stderr
    start, end = records
    assert start["devices"][0]["power_source"] == (
        "current_socket_power" if power.get("current") else "average_socket_power")
    assert end["method"] == "polled"
    # Whole watts: 0.5 W of 200-500 W at most.
    assert_exact(scenario, records, epoch, rel=0.01)


@pytest.mark.timing
def test_a_partitioned_gpu_is_one_device_read_through_its_primary_partition():
    # CPX: eight partitions per GPU, each enumerated as a processor; power and energy are the
    # socket's, on partition 0 only.  ROCR_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES count
    # partitions and name their GPU.
    scenario = {"devices": [mi300({"type": "constant", "watts": 300}, partitions=8),
                            mi300({"type": "constant", "watts": 500}, partitions=8)]}
    r, records, epoch = run_json(scenario)
    assert r.returncode == 0, r.stderr
    start = records[0]
    assert [d["index"] for d in start["devices"]] == [0, 8]
    assert_exact(scenario, records, epoch)
    r, records, _ = run_json(scenario, env_extra={"ROCR_VISIBLE_DEVICES": "9,10"})
    assert [d["index"] for d in records[0]["devices"]] == [8]
    assert records[0]["scope"] == {"source": "ROCR_VISIBLE_DEVICES", "value": "9,10"}
    # HIP numbers what ROCr left: its 8 is the ninth partition, the second GPU's first.
    r, records, _ = run_json(scenario, env_extra={"ROCR_VISIBLE_DEVICES": "0,1,8",
                                                  "HIP_VISIBLE_DEVICES": "2"})
    assert [d["index"] for d in records[0]["devices"]] == [8]
    r, records, _ = run_json(scenario, "--gpus", "3")
    assert [d["index"] for d in records[0]["devices"]] == [0]


@pytest.mark.timing
def test_rocm_smi_is_the_fallback_without_amd_smi():
    scenario = {"devices": [mi300(random_segments(2, high=700)), mi300({"type": "constant", "watts": 250})]}
    r, records, epoch = run_json(scenario, cmd=("sleep", "3"), rocm_smi=True)
    assert r.returncode == 0, r.stderr
    start, end = records
    assert start["backend"] == "rocm_smi"
    # ROCm SMI has no UUID: ROCr's, from the unique id, is the key.
    assert start["devices"][0]["uuid"] == "GPU-4b8ab6c15fd9e300"
    assert end["method"] == "counter"
    assert_exact(scenario, records, epoch)


def test_only_the_sampler_thread_calls_amd_smi(tmp):
    log = tmp / "calls.jsonl"
    scenario = {"devices": [mi300({"type": "constant", "watts": 300}) for _ in range(2)]}
    r, records, _ = run_json(scenario, cmd=("sleep", "1"),
                             env_extra={"FAKE_AMDSMI_CALL_LOG": str(log)})
    assert r.returncode == 0, r.stderr
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert [c["device_call_threads"] for c in calls] == [1]


def test_no_gpu_library_at_all_is_one_line_naming_each_vendor():
    env, _ = fake_amd({"devices": []})
    env["JOULES_AMDSMI_LIBRARY"] = env["JOULES_NVML_LIBRARY"]
    env["JOULES_ROCM_SMI_LIBRARY"] = env["JOULES_NVML_LIBRARY"]
    r = joules("run", "--", "true", env=env)
    assert r.returncode == 125
    assert len(r.stderr.splitlines()) == 1, r.stderr
    for part in ("found no GPU library", "NVIDIA management library", "AMD SMI", "ROCm SMI",
                 "Level Zero", "--backend sim"):
        assert part in r.stderr, part


def test_amd_smi_init_failure_names_the_fix():
    env, _ = fake_amd({"init_error": "NO_PERM", "devices": [mi300({})]})
    r = joules("run", "--", "true", env=env)
    assert r.returncode == 125 and len(r.stderr.splitlines()) == 1
    assert "amdsmi_init failed" in r.stderr and "render and video groups" in r.stderr


@pytest.mark.timing
def test_a_node_with_nvidia_and_amd_gpus_measures_both(tmp):
    nvidia = {"devices": [{"architecture": "hopper", "latency_us": 20,
                           "power": {"type": "constant", "watts": 350}}]}
    amd = {"devices": [mi300({"type": "constant", "watts": 550}),
                       mi300({"type": "constant", "watts": 450})]}
    env, epoch = fake_gpus(nvidia)
    amd_env, amd_epoch = fake_amd(amd)
    amd_env.pop("JOULES_NVML_LIBRARY")
    env.update(amd_env)
    r = joules("run", "--json", "--", "sleep", "2", env=env)
    assert r.returncode == 0, r.stderr
    start, end = [json.loads(line) for line in r.stderr.splitlines() if line.startswith("{")]
    assert start["backend"] == "nvml+amdsmi"
    assert [g["backend"] for g in start["gpu_libraries"]] == ["nvml", "amdsmi"]
    assert start["nvml_version"] is not None
    assert [(d["vendor"], d["index"]) for d in start["devices"]] == [("nvidia", 0), ("amd", 0),
                                                                      ("amd", 1)]
    a, b = end["start_monotonic_s"], end["end_monotonic_s"]
    assert end["devices"][0]["energy_j"] == pytest.approx(truth_j(nvidia, 0, epoch, a, b),
                                                          rel=1e-3 * EDGE_SLACK)
    for k in (1, 2):
        truth = device_truth_j(amd["devices"][k - 1], amd_epoch, a, b)
        assert end["devices"][k]["energy_j"] == pytest.approx(truth, rel=1e-3 * EDGE_SLACK)
    # Indices are per vendor: a bare one is refused, VENDOR:INDEX names one.
    r = joules("run", "--gpus", "0", "--", "true", env=env)
    assert r.returncode == 2 and "(nvidia:0, amd:0, amd:1)" in r.stderr
    r = joules("run", "--json", "--gpus", "amd:1", "--", "true", env=env)
    start = json.loads(r.stderr.splitlines()[0])
    assert [(d["vendor"], d["index"]) for d in start["devices"]] == [("amd", 1)]
    # CUDA_VISIBLE_DEVICES is the NVIDIA GPUs' on a node that has them: the AMD ones stay.
    r = joules("run", "--json", "--", "true", env={**env, "CUDA_VISIBLE_DEVICES": "0"})
    start = json.loads(r.stderr.splitlines()[0])
    assert len(start["devices"]) == 3
    assert start["scope"]["source"] == "CUDA_VISIBLE_DEVICES, all AMD GPUs"



@pytest.mark.timing
def test_a_gpu_lost_before_the_start_is_in_the_records_as_lost_from_the_start():
    # Every call about GPU 1 answers NOT_FOUND from before joules starts.
    scenario = {"devices": [mi300({"type": "constant", "watts": 300}),
                            mi300({"type": "constant", "watts": 400},
                                  faults=[{"at_s": 0, "kind": "lost"}])]}
    r, records, epoch = run_json(scenario, cmd=("sleep", "1"))
    assert r.returncode == 0, r.stderr
    start, end = records
    assert [d["index"] for d in start["devices"]] == [0, 1]
    assert end["status"] == "measurement_degraded"
    lost = end["devices"][1]
    assert lost["lost_at_s"] == 0 and lost["energy_j"] is None
    assert end["devices"][0]["energy_j"] == pytest.approx(300.0 * end["duration_s"],
                                                          rel=1e-3 * EDGE_SLACK)
    assert any("AMD GPU 1 was lost before the start" in d and "NOT_FOUND" in d
               for d in end["degradations"])
    assert "AMD GPU 1 is lost" in r.stderr
