"""What `joules monitor` costs in NVML calls, and that reading some health less often loses
nothing a person would see: on the fake NVML, the calls per GPU of `monitor --json --interval
500` (from the library's call log) against the budget of docs/monitor-doctor.md, and how soon
a change shows: fast readings at the next interval, a new process and a new performance state at
the next interval, a fault of the slow tier within 5 s."""
import json
import os
import signal
import subprocess
import threading
import time

from conftest import JOULES, fake_gpus

NO_RAPL = {"JOULES_POWERCAP_ROOT": "/nonexistent-powercap"}
INTERVAL_S = 0.5
SLOW_S = 5.0  # the slow tier's period (src/backends/nvml/nvml_health.hpp)
# Calls per GPU and health read with every reading answered: the power and energy reading, and 11
# for health (utilisation, memory, temperature, two clocks, clock-event reasons, PCIe generation,
# one field-values call, two GPM, one XID event wait); a slow read adds 5 (PCIe width,
# persistence mode, performance state, two process lists) at most every 5 s; the processes'
# utilisation, the encoder and the decoder are read once a second each.  At 500 ms:
# 24 + 5 / 4.5 s + 1 + 2 ≈ 28 per s; the budget leaves room for one slow read more than that in
# the stretch measured.
FAST_PER_READ = 12
BUDGET_PER_S = 29.0
# A read that a busy machine stretched past a millisecond is taken again (src/sampler/sampler.cpp):
# two such rereads of a device's reading (one call each) are allowed for over a run.
REREADS = 2
PER_SECOND = ("nvmlDeviceGetProcessUtilization", "nvmlDeviceGetEncoderUtilization",
              "nvmlDeviceGetDecoderUtilization")
SLOW_TIER = ("nvmlDeviceGetPersistenceMode", "nvmlDeviceGetCurrPcieLinkWidth",
             "nvmlDeviceGetPerformanceState", "nvmlDeviceGetRunningProcessDetailList")
SLOW_GETTERS = ("nvmlDeviceGetTotalEccErrors", "nvmlDeviceGetRetiredPages",
                "nvmlDeviceGetRetiredPagesPendingStatus", "nvmlDeviceGetRemappedRows",
                "nvmlDeviceGetPcieReplayCounter", "nvmlDeviceGetEnforcedPowerLimit")


def gpu(**extra):
    """An H100 as bench/suite/fig_monitor.py has it: busy, 20 µs per call, one process."""
    d = {"latency_us": 20, "power": {"type": "constant", "watts": 300},
         "health": {"gpu_util_percent": 90, "sm_util_percent": 80},
         "processes": [{"pid": os.getpid(), "used_memory_bytes": 1 << 30}]}
    d.update(extra)
    return d


class Monitor:
    """`joules monitor --json --interval 500` on a pipe; each sample with the CLOCK_MONOTONIC
    instant it arrived."""

    def __init__(self, scn, env=None):
        e, self.epoch_ns = fake_gpus(scn)
        full = dict(os.environ)
        full.pop("CUDA_VISIBLE_DEVICES", None)
        full.update(e)
        full.update(NO_RAPL)
        full.update(env or {})
        self.proc = subprocess.Popen([JOULES, "monitor", "--json", "--interval", "500"],
                                     env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        self.samples = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.samples.append((time.monotonic(), json.loads(line)))

    def scenario_time(self, t_s):
        """The CLOCK_MONOTONIC instant (s) of scenario time t_s."""
        return self.epoch_ns / 1e9 + t_s

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        err = self.proc.communicate(timeout=30)[1]
        self.reader.join(timeout=5)
        assert self.proc.returncode == 128 + signal.SIGINT, err
        return self.samples


def calls_per_gpu(log, gpus):
    calls = json.loads(log.read_text().splitlines()[-1])["calls"]
    return {name: n / gpus for name, n in calls.items()
            if name.startswith(("nvmlDevice", "nvmlGpm", "nvmlEventSetWait")) and "Handle" not in name
            and "Count" not in name}


def test_nvml_calls_per_gpu_per_second_keep_to_the_budget(tmp):
    # Two runs, short and long: the difference leaves start-up (probing every reading, the
    # sampler's start burst) out.  Health reads are counted by their utilisation call (one each).
    scn = {"devices": [gpu(), gpu()]}
    runs = []
    for seconds in (2.0, 9.5):
        log = tmp / f"calls-{seconds}.jsonl"
        m = Monitor(scn, env={"FAKE_NVML_CALL_LOG": str(log)})
        time.sleep(seconds)
        m.stop()
        runs.append(calls_per_gpu(log, 2))
    short, long_ = runs
    reads = long_["nvmlDeviceGetUtilizationRates"] - short["nvmlDeviceGetUtilizationRates"]
    assert reads >= 12, runs
    per_read = (sum(long_.values()) - sum(short.values())) / reads
    per_s = per_read / INTERVAL_S
    assert per_s <= BUDGET_PER_S + REREADS / reads / INTERVAL_S, (per_s, runs)
    assert per_read >= FAST_PER_READ, (per_read, runs)  # the count is of something
    slow = sum(long_.get(n, 0) - short.get(n, 0) for n in SLOW_TIER)
    per_second = sum(long_.get(n, 0) - short.get(n, 0) for n in PER_SECOND)
    # One a second at most each: reads / 2 of them at 500 ms (and one more at an edge).
    for name in PER_SECOND:
        each = long_.get(name, 0) - short.get(name, 0)
        assert 0 < each <= reads * INTERVAL_S + 1, (name, each, reads)
    fast_per_read = (sum(long_.values()) - sum(short.values()) - slow - per_second) / reads
    # ±1 power tick, and the rereads.
    assert fast_per_read <= FAST_PER_READ + (2 + REREADS) / reads, (fast_per_read, runs)
    # The slow tier comes from the field-values call: its getters are never needed here.
    for name in SLOW_GETTERS:
        assert name not in long_, (name, long_)
    # Persistence mode has no field: read at the first read and every 4.5 to 5 s after it.
    assert long_["nvmlDeviceGetPersistenceMode"] <= 3, long_
    # One field-values call per read for health, one per tick for power and energy (and one per
    # reread).
    fields = long_["nvmlDeviceGetFieldValues"] - short["nvmlDeviceGetFieldValues"]
    assert fields <= 2 * reads + 2 + REREADS, (fields, reads)


def test_changes_show_at_the_next_interval_and_faults_within_five_seconds():
    # Scenario time 0 is 10 s before the start; at 13 s the GPU heats up, slows its clocks into
    # P2, a second process starts, and an uncorrectable ECC error and a failed row remap happen.
    at_s = 13.0
    change = {"at_s": at_s,
              "health": {"temperature_c": 77, "clocks_mhz": {"sm": 1410}, "performance_state": 2,
                         "ecc_uncorrected": 2, "remap_failure": True},
              "processes": [{"pid": os.getpid(), "used_memory_bytes": 1 << 30},
                            {"pid": os.getppid(), "used_memory_bytes": 3 << 30}]}
    m = Monitor({"devices": [gpu(changes=[change])]})
    time.sleep(3.0 + SLOW_S + 1.5)
    samples = m.stop()
    fault = m.scenario_time(at_s)

    def first(predicate):
        """Arrival of the first sample whose GPU satisfies predicate, relative to the change."""
        for t, s in samples:
            if predicate(s["devices"][0]):
                return t - fault
        return None

    before = [s["devices"][0] for t, s in samples if t < fault - 0.1]
    assert before and all(d["ecc_uncorrected_volatile"] == 0 and d["temperature_c"] == 40
                          and d["performance_state"] == 0 and len(d["processes"]) == 1
                          for d in before), before
    # A read at most one interval after the change, printed at most one interval after that.
    soon = 2 * INTERVAL_S + 0.5
    assert -0.1 < first(lambda d: d["temperature_c"] == 77) < soon
    assert -0.1 < first(lambda d: d["sm_clock_mhz"] == 1410) < soon
    # The process list and the performance state are read again when memory in use and the
    # clocks change.
    assert -0.1 < first(lambda d: len(d["processes"]) == 2) < soon
    assert -0.1 < first(lambda d: d["performance_state"] == 2) < soon
    # The error counters and the remapper: with the slow tier, within its period.
    ecc = first(lambda d: d["ecc_uncorrected_volatile"] == 2)
    assert ecc is not None and -0.1 < ecc < SLOW_S + INTERVAL_S + 0.5, ecc
    remap = first(lambda d: d["remap_failure"] is True)
    assert remap is not None and remap < SLOW_S + INTERVAL_S + 0.5, remap
    last = samples[-1][1]["devices"][0]
    assert {"ecc_uncorrectable", "remap_failure"} <= {f["code"] for f in last["findings"]}
