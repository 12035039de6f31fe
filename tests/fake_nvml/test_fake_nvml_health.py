"""Tests of the fake libnvidia-ml.so.1, part two: versioned structs, field values, health,
processes, MIG, GPM, the call log and concurrency (run by CTest with test_fake_nvml.py)."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

import scenario as sc
from fake_nvml_ctypes import (ARGUMENT_VERSION_MISMATCH, FUNCTION_NOT_FOUND, INSUFFICIENT_SIZE,
                              INVALID_ARGUMENT, MEMORY_V2_VERSION, NO_PERMISSION, NOT_FOUND,
                              NOT_SUPPORTED, POWER_VALUE_V2_VERSION, SUCCESS, MemoryV2, Memory,
                              PowerValueV2, ProcessDetail, ProcessUtilization, ProcessV1, ProcessV2,
                              EVENT_TYPE_XID, TIMEOUT, EventData, library_path, session)

from conftest import at, sample_times

c_uint, c_ull, byref = ctypes.c_uint, ctypes.c_ulonglong, ctypes.byref


def test_memory_v2_version_trap():
    with session({"devices": [{"health": {"memory_used_bytes": 1 << 30}}]}) as s:
        h = s.h()
        m = MemoryV2(version=2)  # the bare number, as nvtop sets it
        assert s.call("nvmlDeviceGetMemoryInfo_v2", h, byref(m)) == FUNCTION_NOT_FOUND
        m.version = MEMORY_V2_VERSION
        assert s.call("nvmlDeviceGetMemoryInfo_v2", h, byref(m)) == SUCCESS
        assert m.used == 1 << 30 and m.used + m.reserved + m.free == m.total
        v1 = Memory()
        assert s.call("nvmlDeviceGetMemoryInfo", h, byref(v1)) == SUCCESS
        assert v1.used == m.used + m.reserved  # v1 counts reserved memory as used


def test_field_values_per_field_status():
    spec = {"devices": [{"architecture": "volta"}, {"architecture": "hopper"}]}
    with session(spec) as s:
        before = time.time() * 1e6
        volta = s.fields(s.h(0), [83, 185, 186, 187, 190, 191, 9999])
        assert [f.nvmlReturn for f in volta] == [SUCCESS, NOT_SUPPORTED, SUCCESS, SUCCESS,
                                                 SUCCESS, SUCCESS, NOT_SUPPORTED]
        assert abs(volta[0].timestamp - before) < 5e6  # µs since 1970
        assert volta[3].value.uiVal == 200000 and volta[4].value.uiVal == 700000
        memory_scope = s.fields(s.h(1), [185, 186], scope=2)
        assert [f.nvmlReturn for f in memory_scope] == [NOT_SUPPORTED] * 2
    with session({"devices": [{}]}, "r470") as s:
        f = s.fields(s.h(), [83] + list(range(185, 193)))
        assert f[0].nvmlReturn == SUCCESS
        assert [v.nvmlReturn for v in f[1:]] == [NOT_SUPPORTED] * 8


def field_number(f) -> int:
    """A field's value whatever its type (1: unsigned int, 3: unsigned long long)."""
    return {1: f.value.uiVal, 3: f.value.ullVal}[f.valueType]


def getter_answers(s, h) -> dict[int, tuple[int, int]]:
    """What the getters answer for the health fields joules batches: field id -> (status, value)."""
    out = {}
    for fid, (kind, counter) in {3: (0, 0), 4: (1, 0), 5: (0, 1), 6: (1, 1)}.items():
        n = c_ull()
        out[fid] = (s.call("nvmlDeviceGetTotalEccErrors", h, kind, counter, byref(n)), n.value)
    for fid, cause in {29: 0, 30: 1}.items():
        count = c_uint(0)
        rc = s.call("nvmlDeviceGetRetiredPages", h, cause, byref(count), None)
        out[fid] = (SUCCESS if rc in (SUCCESS, INSUFFICIENT_SIZE) else rc, count.value)
    out[31] = s.uint("nvmlDeviceGetRetiredPagesPendingStatus", h)
    rows = [c_uint() for _ in range(4)]
    rc = s.call("nvmlDeviceGetRemappedRows", h, *map(byref, rows))
    for k, fid in enumerate((142, 143, 144, 145)):
        out[fid] = (rc, rows[k].value)
    out[94] = s.uint("nvmlDeviceGetPcieReplayCounter", h)
    out[190] = s.uint("nvmlDeviceGetEnforcedPowerLimit", h)
    return out


def assert_fields_match_getters(s, h, variant):
    want = getter_answers(s, h)
    if variant == "r470":  # its header had no power fields (185-192), the getter is older
        want[190] = (NOT_SUPPORTED, 0)
    got = s.fields(h, list(want))
    for f in got:
        status, value = want[f.fieldId]
        assert f.nvmlReturn == status, (f.fieldId, f.nvmlReturn, status)
        if status == SUCCESS:
            assert field_number(f) == value, (f.fieldId, field_number(f), value)


def test_health_fields_answer_as_their_getters():
    bad = {"ecc_corrected": 7, "ecc_uncorrected": 2, "ecc_corrected_aggregate": 40,
           "retired_pages": 3, "retired_pages_single_bit": 5, "retirement_pending": True,
           "remapped_rows_corrected": 4, "remapped_rows_uncorrected": 1, "remap_pending": True,
           "remap_failure": True, "pcie_replay_counter": 12}
    spec = {"devices": [
        {"architecture": "ampere", "health": bad, "limits": {"current_w": 450}},
        {"architecture": "volta", "health": dict(bad, ecc_enabled=False)},  # no remapper, no ECC
        {"architecture": "ampere", "mig": {"enabled": True}},  # no remapper while MIG is on
        {"architecture": "hopper", "fields_not_supported": [3, 142, 94]}]}
    for variant in ("full", "r470"):
        with session(spec, variant) as s:
            for i in range(3):  # not GPU 3, whose driver lacks some fields (below)
                assert_fields_match_getters(s, s.h(i), variant)
            a100 = {f.fieldId: f for f in s.fields(s.h(0), [4, 30, 31, 143, 145, 190])}
            assert [field_number(a100[i]) for i in (4, 30, 31, 143, 145)] == [2, 3, 1, 1, 1]
            assert variant == "r470" or field_number(a100[190]) == 450000
            volta = s.fields(s.h(1), [3, 142])
            assert [f.nvmlReturn for f in volta] == [NOT_SUPPORTED, NOT_SUPPORTED]
            # Fields a driver's table lacks answer NOT_SUPPORTED; their getters still work.
            missing = s.fields(s.h(3), [3, 4, 142, 94])
            assert [f.nvmlReturn for f in missing] == [NOT_SUPPORTED, SUCCESS, NOT_SUPPORTED,
                                                       NOT_SUPPORTED]
            assert s.uint("nvmlDeviceGetPcieReplayCounter", s.h(3)) == (SUCCESS, 0)


def test_changes_replace_health_and_processes_from_their_instant(clock):
    spec = {"devices": [{
        "health": {"gpu_util_percent": 10, "pcie_tx_kib_s": 100},
        "processes": [{"pid": 7, "used_memory_bytes": 1 << 30}],
        "changes": [
            {"at_s": 2.0, "health": {"ecc_uncorrected": 3, "pcie_tx_kib_s": 300}},
            {"at_s": 4.0, "health": {"gpu_util_percent": 90},
             "processes": [{"pid": 7, "used_memory_bytes": 1 << 30},
                           {"pid": 8, "used_memory_bytes": 2 << 30}]}]}]}
    with session(spec, clock=clock) as s:
        h = s.h()

        def state():
            u = (c_uint * 2)()
            assert s.call("nvmlDeviceGetUtilizationRates", h, u) == SUCCESS
            n = c_ull()
            assert s.call("nvmlDeviceGetTotalEccErrors", h, 1, 0, byref(n)) == SUCCESS
            count, infos = c_uint(8), (ProcessV2 * 8)()
            assert s.call("nvmlDeviceGetComputeRunningProcesses_v3", h, byref(count), infos) == 0
            m = MemoryV2(version=MEMORY_V2_VERSION)
            assert s.call("nvmlDeviceGetMemoryInfo_v2", h, byref(m)) == SUCCESS
            ecc_field, tx = s.fields(h, [4, 197])
            assert field_number(ecc_field) == n.value  # the field follows the same state
            return (u[0], n.value, [infos[i].pid for i in range(count.value)], m.used >> 30,
                    field_number(tx))

        at(clock, 1.0)
        assert state() == (10, 0, [7], 1, 100 * 1024)
        at(clock, 3.0)
        assert state() == (10, 3, [7], 1, (200 + 300) * 1024)  # 2 s at 100, 1 s at 300 KiB/s
        at(clock, 4.0)
        assert state() == (90, 3, [7, 8], 3, (200 + 600) * 1024)
    with pytest.raises(AssertionError):  # changes out of order: the scenario is refused
        with session({"devices": [{"changes": [{"at_s": 2}, {"at_s": 1}]}]}):
            pass


def test_set_limit_and_clamp_keep_the_counter_exact(clock):
    spec = {"_test": "clamp", "devices": [{
        "power": {"type": "linear", "points": [[0, 100], [4, 900], [8, 150]],
                  "clamp_to_limit": True},
        "limits": {"default_w": 700, "min_w": 200, "max_w": 700, "current_w": 650},
        "energy_counter": {"update_ms": 20}, "power_usage": {"window_ms": 1000, "update_ms": 100}}]}
    truth = sc.load(spec).devices[0]
    with session(spec, clock=clock) as s:
        h = s.h()
        assert s.call("nvmlDeviceSetPowerManagementLimit", h, c_uint(100000)) == INVALID_ARGUMENT
        assert s.uint("nvmlDeviceGetPowerManagementLimit", h) == (SUCCESS, 650000)
        for t_set, mw in [(2.5, 400000), (3.3, 400000), (5.125, 700000), (6.0, 250500)]:
            for t in sample_times(t_set, 40, int(t_set * 1000)):
                if t >= truth.epochs[-1].start_s:
                    t = at(clock, t)
                    assert s.energy(h) == (SUCCESS, truth.counter_mj(t)), t
            t = at(clock, t_set)
            assert s.call("nvmlDeviceSetPowerManagementLimit", h, c_uint(mw)) == SUCCESS
            truth.set_power_limit(t, mw)
            assert s.uint("nvmlDeviceGetEnforcedPowerLimit", h) == (SUCCESS, mw)
        for t in sample_times(9.0, 200, 11):
            t = at(clock, t)
            assert s.energy(h) == (SUCCESS, truth.counter_mj(t)), t
            assert s.uint("nvmlDeviceGetPowerUsage", h) == (SUCCESS, truth.power_usage_mw(t))
        assert truth.watts(7.0) == pytest.approx(250.5)
        reasons = c_ull()
        at(clock, 7.0)
        assert s.call("nvmlDeviceGetCurrentClocksEventReasons", h, byref(reasons)) == SUCCESS
        assert reasons.value & 0x4  # SW power cap
        pv = PowerValueV2(version=2, powerScope=0, powerValueMw=300000)
        assert s.call("nvmlDeviceSetPowerManagementLimit_v2", h, byref(pv)) == \
            ARGUMENT_VERSION_MISMATCH
        pv.version = POWER_VALUE_V2_VERSION
        assert s.call("nvmlDeviceSetPowerManagementLimit_v2", h, byref(pv)) == SUCCESS
    with session({"devices": [{"limits": {"settable": False}}]}) as s:
        assert s.call("nvmlDeviceSetPowerManagementLimit", s.h(), c_uint(300000)) == NO_PERMISSION


def test_mig_handles():
    spec = {"devices": [{"mig": {"enabled": True, "devices": [
        {"gpu_instance_id": 3, "compute_instance_id": 0,
         "processes": [{"pid": 4242, "used_memory_bytes": 1 << 30}]},
        {"uuid": "MIG-aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"}]}}]}
    with session(spec) as s:
        gpu = s.h()
        assert s.uint("nvmlDeviceGetMaxMigDeviceCount", gpu) == (SUCCESS, 7)
        current, pending = c_uint(), c_uint()
        assert s.call("nvmlDeviceGetMigMode", gpu, byref(current), byref(pending)) == SUCCESS
        assert current.value == pending.value == 1
        migs = []
        for i in range(3):
            m = ctypes.c_void_p()
            rc = s.call("nvmlDeviceGetMigDeviceHandleByIndex", gpu, i, byref(m))
            assert rc == (SUCCESS if i < 2 else NOT_FOUND)
            migs.append(m)
        parent = ctypes.c_void_p()
        assert s.call("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", migs[0], byref(parent)) == 0
        assert parent.value == gpu.value
        assert s.uint("nvmlDeviceIsMigDeviceHandle", migs[1]) == (SUCCESS, 1)
        assert s.uint("nvmlDeviceIsMigDeviceHandle", gpu) == (SUCCESS, 0)
        assert s.uint("nvmlDeviceGetGpuInstanceId", migs[0]) == (SUCCESS, 3)
        assert s.uint("nvmlDeviceGetComputeInstanceId", migs[0]) == (SUCCESS, 0)
        assert s.string("nvmlDeviceGetName", migs[0])[1] == "NVIDIA H100 80GB HBM3 MIG 1g.10gb"
        by_uuid = ctypes.c_void_p()
        uuid = b"MIG-aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
        assert s.call("nvmlDeviceGetHandleByUUID", uuid, byref(by_uuid)) == SUCCESS
        assert by_uuid.value == migs[1].value
        assert s.energy(migs[0])[0] == NOT_SUPPORTED  # power is a whole-GPU quantity
        assert s.energy(gpu)[0] == SUCCESS
        util = (c_uint * 2)()
        assert s.call("nvmlDeviceGetUtilizationRates", gpu, util) == NOT_SUPPORTED
        count, infos = c_uint(4), (ProcessV2 * 4)()
        assert s.call("nvmlDeviceGetComputeRunningProcesses_v3", migs[0], byref(count), infos) == 0
        assert (count.value, infos[0].pid, infos[0].gpuInstanceId) == (1, 4242, 3)


def test_mig_layout_memory():
    """A MIG layout: two compute instances of GPU instance 1 and one of GPU instance 2, each with
    its own memory in use (its own part plus its processes')."""
    gib = 1 << 30
    spec = {"devices": [{"mig": {"enabled": True, "devices": [
        {"name": "NVIDIA H100 80GB HBM3 MIG 3g.40gb", "gpu_instance_id": 1, "compute_instance_id": 0,
         "memory_total_bytes": 40 * gib, "memory_used_bytes": gib,
         "processes": [{"pid": 7, "used_memory_bytes": 2 * gib}]},
        {"name": "NVIDIA H100 80GB HBM3 MIG 3g.40gb", "gpu_instance_id": 1, "compute_instance_id": 1,
         "memory_total_bytes": 40 * gib, "memory_used_bytes": gib},
        {"gpu_instance_id": 2, "memory_used_bytes": 60 * gib}]}}]}
    with pytest.raises(AssertionError):  # used above the total: the scenario is refused
        with session(spec):
            pass
    spec["devices"][0]["mig"]["devices"][2]["memory_used_bytes"] = gib // 2
    with session(spec) as s:
        gpu = s.h()
        got = []
        for i in range(3):
            m = ctypes.c_void_p()
            assert s.call("nvmlDeviceGetMigDeviceHandleByIndex", gpu, i, byref(m)) == SUCCESS
            mem = MemoryV2(version=MEMORY_V2_VERSION)
            assert s.call("nvmlDeviceGetMemoryInfo_v2", m, byref(mem)) == SUCCESS
            got.append((s.uint("nvmlDeviceGetGpuInstanceId", m)[1],
                        s.uint("nvmlDeviceGetComputeInstanceId", m)[1], mem.total, mem.used))
        assert got == [(1, 0, 40 * gib, 3 * gib), (1, 1, 40 * gib, gib), (2, 0, 10 * gib, gib // 2)]


def test_processes_sizing_and_stride():
    procs = [{"pid": 100 + i, "used_memory_bytes": (i + 1) << 20} for i in range(3)]
    for stride, info in [(24, ProcessV2), (32, ProcessDetail)]:
        with session({"process_struct_bytes": stride, "devices": [{"processes": procs}]}) as s:
            h, count = s.h(), c_uint(0)
            assert s.call("nvmlDeviceGetComputeRunningProcesses_v3", h, byref(count), None) == \
                INSUFFICIENT_SIZE
            assert count.value == 3
            infos = (info * 3)()
            assert s.call("nvmlDeviceGetComputeRunningProcesses_v3", h, byref(count), infos) == 0
            assert [(p.pid, p.usedGpuMemory, p.gpuInstanceId) for p in infos] == \
                [(100 + i, (i + 1) << 20, 0xFFFFFFFF) for i in range(3)]
            v1 = (ProcessV1 * 3)()
            assert s.call("nvmlDeviceGetComputeRunningProcesses", h, byref(count), v1) == 0
            assert [p.pid for p in v1] == [100, 101, 102]
            count = c_uint(0)
            assert s.call("nvmlDeviceGetGraphicsRunningProcesses_v3", h, byref(count), None) == 0
            assert count.value == 0


def test_process_utilization_samples_not_found_and_not_supported():
    procs = [{"pid": 100, "sm_util_percent": 60, "memory_util_percent": 10},
             {"pid": 101, "sm_util_percent": 20},
             {"pid": 102}]  # ran nothing: no sample
    scn = {"devices": [{"processes": procs, "graphics_processes": [{"pid": 100}]},
                       {"processes": [{"pid": 103}]},
                       {"processes": procs, "process_utilization": False}]}
    with session(scn) as s:
        fn = "nvmlDeviceGetProcessUtilization"
        h, count = s.h(0), c_uint(0)
        assert s.call(fn, h, None, byref(count), c_ull(0)) == INSUFFICIENT_SIZE
        assert count.value == 2  # pid 100 once, although it is in both lists
        samples = (ProcessUtilization * 4)()
        count = c_uint(4)
        before = int(time.time() * 1e6)
        assert s.call(fn, h, samples, byref(count), c_ull(0)) == SUCCESS
        got = [(x.pid, x.smUtil, x.memUtil) for x in samples[:count.value]]
        assert got == [(100, 60, 10), (101, 20, 0)]
        stamp = samples[0].timeStamp
        assert before <= stamp <= int(time.time() * 1e6)
        # Only samples newer than lastSeenTimeStamp: none from the future.
        count = c_uint(4)
        assert s.call(fn, h, samples, byref(count), c_ull(stamp + 10**9)) == NOT_FOUND
        count = c_uint(4)
        assert s.call(fn, s.h(1), samples, byref(count), c_ull(0)) == NOT_FOUND  # nothing ran
        assert s.call(fn, s.h(2), samples, byref(count), c_ull(0)) == NOT_SUPPORTED


def test_health_defaults_and_gpm():
    with session({"devices": [{"health": {"temperature_c": 61, "sm_util_percent": 42.5}}]}) as s:
        h = s.h()
        assert s.uint("nvmlDeviceGetTemperature", h, 0) == (SUCCESS, 61)
        assert s.uint("nvmlDeviceGetClockInfo", h, 1) == (SUCCESS, 1980)
        assert s.uint("nvmlDeviceGetFanSpeed", h)[0] == NOT_SUPPORTED  # SXM: no fan
        assert s.uint("nvmlDeviceGetCurrPcieLinkGeneration", h) == (SUCCESS, 5)
        assert s.uint("nvmlDeviceGetPerformanceState", h) == (SUCCESS, 0)
        support = (c_uint * 2)(1, 0)
        assert s.call("nvmlGpmQueryDeviceSupport", h, support) == SUCCESS and support[1] == 1
        samples = [ctypes.c_void_p(), ctypes.c_void_p()]
        for sample in samples:
            assert s.call("nvmlGpmSampleAlloc", byref(sample)) == SUCCESS
            assert s.call("nvmlGpmSampleGet", h, sample) == SUCCESS

        class Metric(ctypes.Structure):
            _fields_ = [("metricId", c_uint), ("nvmlReturn", ctypes.c_int),
                        ("value", ctypes.c_double), ("names", ctypes.c_void_p * 3)]

        class Metrics(ctypes.Structure):
            _fields_ = [("version", c_uint), ("numMetrics", c_uint), ("sample1", ctypes.c_void_p),
                        ("sample2", ctypes.c_void_p), ("metrics", Metric * 98)]

        m = Metrics(version=1, numMetrics=2, sample1=samples[0], sample2=samples[1])
        m.metrics[0].metricId, m.metrics[1].metricId = 2, 97
        assert s.call("nvmlGpmMetricsGet", byref(m)) == SUCCESS
        assert (m.metrics[0].nvmlReturn, m.metrics[0].value) == (SUCCESS, 42.5)
        assert m.metrics[1].nvmlReturn == NOT_SUPPORTED
        for sample in samples:
            assert s.call("nvmlGpmSampleFree", sample) == SUCCESS


def test_call_log_counts_calls_and_device_threads(tmp_path):
    log = tmp_path / "calls.jsonl"
    script = textwrap.dedent(f"""
        import ctypes, sys, threading
        lib = ctypes.CDLL({str(library_path())!r})
        assert lib.nvmlInit_v2() == 0
        h = ctypes.c_void_p()
        lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h))
        def sample():
            e = ctypes.c_ulonglong()  # one buffer per thread: a shared one is a data race
            for _ in range(5):
                lib.nvmlDeviceGetTotalEnergyConsumption(h, ctypes.byref(e))
        threads = [threading.Thread(target=sample) for _ in range(int(sys.argv[1]))]
        for t in threads: t.start()
        for t in threads: t.join()
        lib.nvmlShutdown()
    """)
    env = dict(os.environ, FAKE_NVML_SCENARIO='{"devices": [{}]}', FAKE_NVML_CALL_LOG=str(log))
    env.pop("FAKE_NVML_CLOCK_FILE", None)
    for threads in (1, 3):
        subprocess.run([sys.executable, "-c", script, str(threads)], env=env, check=True)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(lines) == 2 and lines[0]["pid"] != lines[1]["pid"]
    assert lines[0]["calls"] == {"nvmlInit_v2": 1, "nvmlDeviceGetHandleByIndex_v2": 1,
                                 "nvmlDeviceGetTotalEnergyConsumption": 5, "nvmlShutdown": 1}
    assert lines[0]["device_call_threads"] == 1
    assert lines[1]["calls"]["nvmlDeviceGetTotalEnergyConsumption"] == 15
    assert lines[1]["device_call_threads"] == 3


def test_readers_and_a_limit_setter_run_concurrently(clock):
    # ctypes drops the GIL during calls, so these really overlap (TSan checks the epoch list).
    import threading
    spec = {"_test": "concurrent", "devices": [{
        "power": {"type": "linear", "points": [[0, 100], [50, 700]], "clamp_to_limit": True}}]}
    with session(spec, clock=clock) as s:
        h = s.h()
        at(clock, 1.0)
        errors = []

        def read():
            e, p = c_ull(), c_uint()
            for _ in range(2000):
                if (s.lib.nvmlDeviceGetTotalEnergyConsumption(h, byref(e)) != SUCCESS or
                        s.lib.nvmlDeviceGetPowerUsage(h, byref(p)) != SUCCESS):
                    errors.append("read failed")

        readers = [threading.Thread(target=read) for _ in range(3)]
        for r in readers:
            r.start()
        for i in range(200):
            assert s.call("nvmlDeviceSetPowerManagementLimit", h, c_uint(200000 + 1000 * i)) == 0
        for r in readers:
            r.join()
        assert not errors


def xid_set(s, *handles):
    """An event set registered for XIDs on `handles`."""
    es = ctypes.c_void_p()
    assert s.call("nvmlEventSetCreate", byref(es)) == SUCCESS
    for h in handles:
        assert s.call("nvmlDeviceRegisterEvents", h, c_ull(EVENT_TYPE_XID), es) == SUCCESS
    return es


def drain(s, es, timeout_ms=0):
    """(handle value, xid) of every event queued now, then the return code that ended it."""
    got = []
    while True:
        e = EventData()
        rc = s.call("nvmlEventSetWait_v2", es, byref(e), c_uint(timeout_ms))
        if rc != SUCCESS:
            return got, rc
        assert e.eventType == EVENT_TYPE_XID and e.gpuInstanceId == 0xFFFFFFFF
        got.append((e.device, e.eventData))


def test_xid_events_after_the_registration_once_oldest_first(clock):
    spec = {"devices": [
        {"xids": [{"at_s": 0.5, "xid": 13}, {"at_s": 2.0, "xid": 79, "count": 3}]},
        {"xids": [{"at_s": 1.5, "xid": 48}]},
        {"xid_events": False}]}
    at(clock, 1.0)
    with session(spec, clock=clock) as s:
        h0, h1, h2 = s.h(0), s.h(1), s.h(2)
        types = c_ull()
        assert s.call("nvmlDeviceGetSupportedEventTypes", h0, byref(types)) == SUCCESS
        assert types.value == EVENT_TYPE_XID
        assert s.call("nvmlDeviceGetSupportedEventTypes", h2, byref(types)) == SUCCESS
        assert types.value == 0
        es = xid_set(s, h0, h1)
        # XID 13 came before the registration: the driver does not queue it for this set.
        assert drain(s, es) == ([], TIMEOUT)
        at(clock, 1.6)
        assert drain(s, es) == ([(h1.value, 48)], TIMEOUT)
        at(clock, 2.5)
        assert drain(s, es) == ([(h0.value, 79)] * 3, TIMEOUT)
        assert drain(s, es) == ([], TIMEOUT)  # delivered once
        # A device without events refuses the registration; a freed set is refused.
        assert s.call("nvmlDeviceRegisterEvents", h2, c_ull(EVENT_TYPE_XID), es) == NOT_SUPPORTED
        assert s.call("nvmlEventSetFree", es) == SUCCESS
        assert s.call("nvmlEventSetWait_v2", es, byref(EventData()), c_uint(0)) == INVALID_ARGUMENT


def test_xid_wait_with_a_timeout_returns_when_the_time_is_up(clock):
    with session({"devices": [{}]}, clock=clock) as s:
        es = xid_set(s, s.h())
        t0 = time.monotonic()
        assert drain(s, es, timeout_ms=50) == ([], TIMEOUT)
        assert 0.04 <= time.monotonic() - t0 < 2.0
        assert s.call("nvmlEventSetFree", es) == SUCCESS


def test_xid_scenario_errors():
    for bad in ({"xids": [{"xid": 79}]}, {"xids": [{"at_s": 1, "xid": -1}]},
                {"xids": [{"at_s": 2, "xid": 79}, {"at_s": 1, "xid": 79}]},
                {"xids": [{"at_s": 1, "xid": 79, "colour": 1}]}):
        with pytest.raises(AssertionError):
            with session({"devices": [bad]}):
                pass


def test_nvlink_state_and_error_fields_follow_the_health():
    spec = {"devices": [
        {"health": {"nvlink_links": 3, "nvlink_links_down": [1], "nvlink_crc_flit_errors": 4,
                    "nvlink_crc_data_errors": 5, "nvlink_replay_errors": 6,
                    "nvlink_recovery_errors": 7}},
        {}]}
    with session(spec) as s:
        h0, h1 = s.h(0), s.h(1)
        states = []
        for link in range(3):
            active = c_uint()
            assert s.call("nvmlDeviceGetNvLinkState", h0, c_uint(link), byref(active)) == SUCCESS
            states.append(active.value)
        assert states == [1, 0, 1]
        assert s.call("nvmlDeviceGetNvLinkState", h0, c_uint(3), byref(c_uint())) == \
            INVALID_ARGUMENT
        assert s.call("nvmlDeviceGetNvLinkState", h1, c_uint(0), byref(c_uint())) == NOT_SUPPORTED
        f = s.fields(h0, [38, 45, 52, 59])
        assert [v.nvmlReturn for v in f] == [SUCCESS] * 4
        assert [field_number(v) for v in f] == [4, 5, 6, 7]
        assert [v.nvmlReturn for v in s.fields(h1, [38, 59])] == [NOT_SUPPORTED] * 2
