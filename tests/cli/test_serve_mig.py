"""MIG on the fake NVML: `joules serve` writes one series per MIG device (joules' names and, with
--dcgm-compat, dcgm-exporter's GPU_I_ID / GPU_I_PROFILE labels) and keeps power and energy on the
GPU alone; `joules run` with MIG UUIDs in CUDA_VISIBLE_DEVICES or --gpus measures the parent GPU
and says in its records that the energy is the whole GPU's (docs/metrics.md, "MIG")."""
import json
import signal
import time

import pytest

from conftest import fake_gpus, joules, wait_for
from exporter_util import one, parse, serve, series
from schema_check import validate

GIB = 1 << 30
MIG_A = "MIG-0a0a0a0a-0000-4000-9000-000000000001"
MIG_B = "MIG-0b0b0b0b-0000-4000-9000-000000000002"
MIG_C = "MIG-0c0c0c0c-0000-4000-9000-000000000003"
GPU0 = "GPU-00000000-0000-4000-8000-000000000000"
GPU1 = "GPU-00000000-0000-4000-8000-000000000001"


def mig_scenario():
    """GPU 0 in MIG mode: GPU instance 1 (3g.40gb) with two compute instances, GPU instance 2
    (1g.10gb) with one.  GPU 1 without MIG."""
    mig = {"enabled": True, "devices": [
        {"name": "NVIDIA H100 80GB HBM3 MIG 3g.40gb", "uuid": MIG_A, "gpu_instance_id": 1,
         "compute_instance_id": 0, "memory_total_bytes": 40 * GIB, "memory_used_bytes": GIB,
         "processes": [{"pid": 4242, "used_memory_bytes": 2 * GIB}]},
        {"name": "NVIDIA H100 80GB HBM3 MIG 3g.40gb", "uuid": MIG_B, "gpu_instance_id": 1,
         "compute_instance_id": 1, "memory_total_bytes": 40 * GIB, "memory_used_bytes": GIB},
        {"name": "NVIDIA H100 80GB HBM3 MIG 1g.10gb", "uuid": MIG_C, "gpu_instance_id": 2,
         "memory_total_bytes": 10 * GIB, "memory_used_bytes": GIB // 2}]}
    gpu = {"name": "NVIDIA H100 80GB HBM3", "architecture": "hopper", "latency_us": 20}
    return {"devices": [dict(gpu, power={"type": "constant", "watts": 400}, mig=mig),
                        dict(gpu, power={"type": "constant", "watts": 250})]}


def test_serve_writes_each_mig_device_and_the_energy_once_per_gpu(procs):
    env, _ = fake_gpus(mig_scenario())
    p = serve("--dcgm-compat", "--hostname", "node-m", "--interval", "100", env=env)
    procs.append(p)
    time.sleep(1.3)  # a health reading has been taken
    m = parse(p.scrape())
    gpu0 = {"gpu": "0", "uuid": GPU0, "hostname": "node-m"}
    assert one(m, "joules_gpu_mig_mode", **gpu0) == 1
    assert one(m, "joules_gpu_mig_mode", gpu="1") == 0
    assert one(m, "joules_gpu_mig_instances", **gpu0) == 3
    assert not series(m, "joules_gpu_mig_instances", gpu="1")
    a = dict(gpu0, gpu_instance="1", compute_instance="0", mig_profile="3g.40gb")
    assert one(m, "joules_gpu_mig_memory_used_bytes", **a) == 3 * GIB  # its own + its process
    assert one(m, "joules_gpu_mig_memory_total_bytes", **a) == 40 * GIB
    assert one(m, "joules_gpu_mig_memory_used_bytes", compute_instance="1", gpu_instance="1") == GIB
    c = dict(gpu0, gpu_instance="2", compute_instance="0", mig_profile="1g.10gb")
    assert one(m, "joules_gpu_mig_memory_used_bytes", **c) == GIB // 2
    uuids = sorted(l["mig_uuid"] for l, _ in series(m, "joules_gpu_mig_info", **gpu0))
    assert uuids == sorted([MIG_A, MIG_B, MIG_C])
    # Power and energy: one series per physical GPU, none per instance, so that a sum over the
    # node counts GPU 0 once.
    for name in ("joules_gpu_energy_joules_total", "joules_gpu_power_watts",
                 "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"):
        found = series(m, name)
        assert len(found) == 2, (name, found)
        assert not any("gpu_instance" in l or "GPU_I_ID" in l for l, _ in found), name
    assert one(m, "joules_gpu_power_watts", gpu="0") == 400
    # dcgm-exporter's names: memory per GPU instance, with GPU_I_ID and GPU_I_PROFILE.
    fb = {l.get("GPU_I_ID"): (l.get("GPU_I_PROFILE"), v)
          for l, v in series(m, "DCGM_FI_DEV_FB_USED", UUID=GPU0)}
    assert fb == {None: (None, fb[None][1]), "1": ("3g.40gb", 3072), "2": ("1g.10gb", 512)}
    assert one(m, "DCGM_FI_DEV_FB_FREE", UUID=GPU0, GPU_I_ID="2") == 9728
    assert not series(m, "DCGM_FI_DEV_FB_USED", UUID=GPU1, GPU_I_ID="1")
    rc, _, err = p.stop(signal.SIGTERM)
    assert rc == 0, err


def test_serve_writes_the_gpm_metrics_of_each_gpu_instance_once(procs):
    # GPM per GPU instance (nvmlGpmMigSampleGet): GPU instance 1 busy, 2 with SM activity only.
    # The figures need two samples 100 ms apart, then stand for the GPU instance, not for each
    # of its compute instances.
    scn = mig_scenario()
    devices = scn["devices"][0]["mig"]["devices"]
    devices[0].update(sm_util_percent=62.5, sm_occupancy_percent=40, tensor_util_percent=25,
                      dram_bw_util_percent=12.5)
    devices[2].update(sm_util_percent=5)
    env, _ = fake_gpus(scn)
    p = serve("--dcgm-compat", "--interval", "100", env=env)
    procs.append(p)
    scraped = {}

    def read():
        scraped["m"] = parse(p.scrape())
        return len(series(scraped["m"], "joules_gpu_mig_sm_active_ratio")) == 2

    assert wait_for(read, timeout=10.0, step=0.05)
    m = scraped["m"]
    gi1 = {"gpu": "0", "gpu_instance": "1", "mig_profile": "3g.40gb"}
    assert one(m, "joules_gpu_mig_sm_active_ratio", **gi1) == 0.625
    assert one(m, "joules_gpu_mig_sm_occupancy_ratio", **gi1) == 0.4
    assert one(m, "joules_gpu_mig_tensor_active_ratio", **gi1) == 0.25
    assert one(m, "joules_gpu_mig_dram_active_ratio", **gi1) == 0.125
    assert all("compute_instance" not in l for l, _ in series(m, "joules_gpu_mig_sm_active_ratio"))
    assert one(m, "joules_gpu_mig_sm_active_ratio", gpu="0", gpu_instance="2") == 0.05
    assert not series(m, "joules_gpu_mig_tensor_active_ratio", gpu_instance="2")
    assert not series(m, "joules_gpu_mig_sm_active_ratio", gpu="1")
    # dcgm-exporter's names, per GPU instance with GPU_I_ID and GPU_I_PROFILE.
    assert one(m, "DCGM_FI_PROF_SM_ACTIVE", UUID=GPU0, GPU_I_ID="1", GPU_I_PROFILE="3g.40gb") == 0.625
    assert one(m, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", UUID=GPU0, GPU_I_ID="1") == 0.25
    assert one(m, "DCGM_FI_PROF_SM_ACTIVE", UUID=GPU0, GPU_I_ID="2") == 0.05
    rc, _, err = p.stop(signal.SIGTERM)
    assert rc == 0, err


def run_records(*args, env_extra=None):
    env, _ = fake_gpus(mig_scenario())
    env.update(env_extra or {})
    r = joules("run", "--json", *args, "--", "sleep", "1", env=env)
    assert r.returncode == 0, r.stderr
    records = [json.loads(line) for line in r.stderr.splitlines() if line.startswith("{")]
    for rec in records:
        validate(rec)
    notes = [line for line in r.stderr.splitlines() if not line.startswith("{")]
    return records, notes


@pytest.mark.parametrize("how", ["cuda", "gpus"])
def test_run_on_mig_uuids_measures_the_parent_gpu_and_says_its_energy_is_shared(how):
    if how == "cuda":
        records, notes = run_records(env_extra={"CUDA_VISIBLE_DEVICES": f"{MIG_C},{MIG_A}"})
    else:
        records, notes = run_records("--gpus", f"{MIG_C},{MIG_A}")
    start, end = records[0], records[-1]
    assert [d["uuid"] for d in start["devices"] if d["kind"] == "gpu"] == [GPU0]
    gpu = start["devices"][0]
    assert gpu["mig_instances"] == [MIG_C, MIG_A]
    assert gpu["energy_shared"] is True
    assert any(f"{MIG_A} is a MIG instance of GPU 0" in n and "whole GPU" in n for n in notes), notes
    # The whole GPU's energy: 400 W, not a share of it.
    assert end["energy_j"] == pytest.approx(400.0 * end["duration_s"], rel=0.05)


def test_run_on_a_gpu_named_as_itself_is_not_marked_shared():
    records, _ = run_records("--gpus", "1")
    gpu = records[0]["devices"][0]
    assert (gpu["uuid"], gpu["mig_instances"], gpu["energy_shared"]) == (GPU1, [], False)
