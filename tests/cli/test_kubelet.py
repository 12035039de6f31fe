"""`joules serve --kubernetes`: pod, namespace and container labels from the kubelet's
pod-resources API (docs/kubernetes.md, "Pods on the series"), against a fake kubelet
(tests/cli/fake_kubelet.py, grpcio on a Unix socket): a whole GPU and a MIG device held by one
container carry its labels, a GPU of no pod carries none; the kubelet going away and coming back
costs the labels and gives one note each way; a hostile or silent kubelet costs the labels, never
a scrape."""
import shutil
import signal
import tempfile
import time

import pytest

from conftest import fake_gpus, wait_for
from exporter_util import one, parse, serve, series
from fake_kubelet import FakeKubelet, RawSocket, list_response

GIB = 1 << 30
MIG_A = "MIG-0a0a0a0a-0000-4000-9000-000000000001"
MIG_C = "MIG-0c0c0c0c-0000-4000-9000-000000000003"
GPU = "GPU-00000000-0000-4000-8000-0000000000%02x"


def scenario():
    """GPU 0 in MIG mode (two MIG devices), GPUs 1 and 2 whole."""
    mig = {"enabled": True, "devices": [
        {"name": "NVIDIA H100 80GB HBM3 MIG 3g.40gb", "uuid": MIG_A, "gpu_instance_id": 1,
         "compute_instance_id": 0, "memory_total_bytes": 40 * GIB, "memory_used_bytes": GIB},
        {"name": "NVIDIA H100 80GB HBM3 MIG 1g.10gb", "uuid": MIG_C, "gpu_instance_id": 2,
         "memory_total_bytes": 10 * GIB, "memory_used_bytes": GIB // 2}]}
    gpu = {"name": "NVIDIA H100 80GB HBM3", "architecture": "hopper", "latency_us": 20}
    return {"devices": [dict(gpu, power={"type": "constant", "watts": 400}, mig=mig),
                        dict(gpu, power={"type": "constant", "watts": 250}),
                        dict(gpu, power={"type": "constant", "watts": 100})]}


PODS = [
    ("train-0", "ml", [("trainer", [("nvidia.com/gpu", [GPU % 1])]),
                       ("sidecar", [("example.com/fpga", [GPU % 2])])]),
    ("infer-7", "serving", [("server", [("nvidia.com/mig-1g.10gb", [MIG_C])])]),
    ("odd-1", 'ns"x', [("c\nq", [("nvidia.com/mig-3g.40gb", [MIG_A])])]),
]


@pytest.fixture
def sock_dir():
    d = tempfile.mkdtemp(prefix="jk")  # short: a Unix socket's path has at most 107 bytes
    yield d
    shutil.rmtree(d, ignore_errors=True)


def start(sock, *extra, procs, kubelet_interval_ms=200):
    env, _ = fake_gpus(scenario())
    p = serve("--kubelet-socket", sock, "--kubelet-interval", str(kubelet_interval_ms),
              "--interval", "100", "--hostname", "node-k", *extra, env=env)
    procs.append(p)
    return p


def pod_labels(m):
    return sorted((l.get("device_id"), l.get("pod"), l.get("namespace"), l.get("container"))
                  for l, _ in series(m, "joules_gpu_pod_info"))


def has_pods(p):
    return bool(series(parse(p.scrape()), "joules_gpu_power_watts", pod="train-0"))


def test_gpus_and_mig_devices_carry_their_pods(sock_dir, procs):
    kubelet = FakeKubelet(f"{sock_dir}/kubelet.sock", list_response(PODS)).start()
    try:
        p = start(kubelet.path, "--dcgm-compat", procs=procs)
        assert wait_for(lambda: has_pods(p), timeout=10)
        time.sleep(1.2)  # a health reading (MIG devices) has been taken
        m = parse(p.scrape())
        # The whole GPU one container holds: every series of it carries the pod.
        owned = {"gpu": "1", "pod": "train-0", "namespace": "ml", "container": "trainer"}
        assert one(m, "joules_gpu_power_watts", **owned) == 250
        assert series(m, "joules_gpu_energy_joules_total", **owned)
        assert series(m, "DCGM_FI_DEV_POWER_USAGE", UUID=GPU % 1, pod="train-0", namespace="ml",
                      container="trainer")
        # A GPU of no pod (the other resource is not a GPU's) and the MIG GPU: no pod labels, and
        # each GPU's energy once.
        for gpu in ("0", "2"):
            (labels, _), = series(m, "joules_gpu_power_watts", gpu=gpu)
            assert "pod" not in labels and "container" not in labels, labels
        assert len(series(m, "joules_gpu_energy_joules_total")) == 3
        # MIG devices: their own series carry the container that holds each; outside strings are
        # escaped as every label value is.
        mig_c = {"gpu": "0", "gpu_instance": "2", "pod": "infer-7", "namespace": "serving",
                 "container": "server"}
        assert one(m, "joules_gpu_mig_memory_used_bytes", **mig_c) == GIB // 2
        assert one(m, "joules_gpu_mig_memory_used_bytes", gpu_instance="1",
                   namespace='ns"x', container="c\nq") == GIB
        assert pod_labels(m) == sorted([(GPU % 1, "train-0", "ml", "trainer"),
                                        (MIG_A, "odd-1", 'ns"x', "c\nq"),
                                        (MIG_C, "infer-7", "serving", "server")])
        rc, _, err = p.stop(signal.SIGTERM)
        assert rc == 0, err
        assert "pod" not in err, err  # the kubelet answered: nothing to say
    finally:
        kubelet.stop()


def test_a_kubelet_away_then_back_costs_the_labels_meanwhile(sock_dir, procs):
    path = f"{sock_dir}/kubelet.sock"
    p = start(path, procs=procs)  # no kubelet yet
    m = parse(p.scrape())
    assert series(m, "joules_gpu_power_watts", gpu="1") and not series(m, "joules_gpu_pod_info")
    kubelet = FakeKubelet(path, list_response(PODS)).start()
    try:
        assert wait_for(lambda: has_pods(p), timeout=10)
        kubelet.stop()
        assert wait_for(lambda: not has_pods(p), timeout=10)
        assert series(parse(p.scrape()), "joules_gpu_power_watts", gpu="1")
        time.sleep(0.6)  # several calls fail: still one note
        kubelet = FakeKubelet(path, list_response(PODS[1:])).start()
        assert wait_for(lambda: series(parse(p.scrape()), "joules_gpu_pod_info", pod="infer-7"),
                        timeout=10)
        assert not series(parse(p.scrape()), "joules_gpu_pod_info", pod="train-0")  # it left
    finally:
        kubelet.stop()
    rc, _, err = p.stop(signal.SIGTERM)
    assert rc == 0, err
    away = [l for l in err.splitlines() if "did not answer" in l]
    back = [l for l in err.splitlines() if "pod labels again" in l]
    assert len(away) == 2 and len(back) == 2, err  # away at start and once later; back twice
    assert path in away[0], away


def truncated_length():
    """A pod whose name claims 2^62 bytes."""
    return b"\x0a\x0c" + b"\x0a" + b"\xff" * 8 + b"\x3f" + b"ab"


HOSTILE = {
    "garbage": b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
    "huge_length": truncated_length(),
    "wrong_wire_type": b"\x08\x01" + b"\x0b",  # field 1 as a varint, then a group start
    "cut_off": list_response(PODS)[:-3],
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_reply_that_cannot_be_decoded_is_a_note_and_no_labels(sock_dir, procs, kind):
    kubelet = FakeKubelet(f"{sock_dir}/kubelet.sock", HOSTILE[kind]).start()
    try:
        # A call may take the whole interval (its time limit) on a loaded machine: a long one,
        # and a third call, so that the first reply was surely read and said.
        p = start(kubelet.path, procs=procs, kubelet_interval_ms=500)
        assert wait_for(lambda: kubelet.calls >= 3, timeout=10)
        m = parse(p.scrape())
        assert series(m, "joules_gpu_power_watts", gpu="1")
        assert not series(m, "joules_gpu_pod_info")
        assert not any("pod" in l for l, _ in series(m, "joules_gpu_power_watts"))
        rc, _, err = p.stop(signal.SIGTERM)
        assert rc == 0, err
        assert "cannot be decoded" in err, err
    finally:
        kubelet.stop()


@pytest.mark.parametrize("data", [b"HTTP/1.1 400 Bad Request\r\n\r\n" + b"\x00" * 4096, None],
                         ids=["not_http2", "silent"])
def test_a_socket_that_is_no_kubelet_never_holds_a_scrape(sock_dir, procs, data):
    raw = RawSocket(f"{sock_dir}/kubelet.sock", data)
    try:
        p = start(raw.path, procs=procs)
        time.sleep(0.5)
        for _ in range(5):
            t0 = time.monotonic()
            m = parse(p.scrape())
            assert time.monotonic() - t0 < 1.0
            assert series(m, "joules_gpu_power_watts", gpu="1")
            assert not series(m, "joules_gpu_pod_info")
        rc, _, err = p.stop(signal.SIGTERM)
        assert rc == 0, err
        assert "did not answer" in err, err
    finally:
        raw.stop()
